package components_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ruleagent/ruleagent/tools"
)

// weatherConfig is the "config" object of a {"type": "builtin", "name":
// "weather"} entry in an agent's tools array; its defaults are the zero
// config's.
type weatherConfig struct {
	Units string `json:"units" jsonschema:"metric (°C) or imperial (°F)"`
}

// weather is one configured instance of the tool.
type weather struct{ cfg weatherConfig }

func (w *weather) Info() tools.Info {
	return tools.Info{Name: "weather", Description: "Current weather for a city.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
}

// Call gets arguments already validated against Info().Parameters. An
// error becomes a tool result the model reads, marked as an error; its
// kind (tools.ErrNotFound, ...) tells a refusal from a failure.
func (w *weather) Call(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	var a struct {
		City string `json:"city"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return tools.Result{}, tools.Wrap(tools.ErrInvalidArgs, err, "weather")
	}
	if a.City != "Paris" {
		return tools.Result{}, tools.Errorf(tools.ErrNotFound, "no weather station in %q", a.City)
	}
	if w.cfg.Units == "imperial" {
		return tools.TextResult("Paris: sunny, 64°F"), nil
	}
	return tools.TextResult("Paris: sunny, 18°C"), nil
}

func init() {
	tools.MustRegister(tools.Definition{
		Name:         "weather",
		Description:  "Current weather for a city.",
		ConfigSchema: tools.SchemaFor(weatherConfig{Units: "metric"}),
		ArgsSchema:   (&weather{}).Info().Parameters,
		New: func(bc tools.BuildContext, raw json.RawMessage) (tools.Tool, error) {
			cfg := weatherConfig{Units: "metric"}
			if err := tools.DecodeConfig(raw, &cfg); err != nil { // strict: unknown fields are errors
				return nil, err
			}
			if cfg.Units != "metric" && cfg.Units != "imperial" {
				return nil, &tools.ConfigError{Path: "units", Msg: fmt.Sprintf("%q is neither metric nor imperial", cfg.Units)}
			}
			return &weather{cfg: cfg}, nil
		},
	})
}
