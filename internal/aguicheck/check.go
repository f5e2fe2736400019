// Package aguicheck checks AG-UI 1.0 event streams in tests.
//
// Check ports the rules of the real @ag-ui/client@1.0.0 validation pipeline
// (SSE frame decoding, the compatibility boundary, the zod schemas of
// enforceEvents, transformChunks, verifyEvents) and adds ruleagent's own
// contract: a stream is one run, ending with exactly one terminal event.
// It is stricter than the client where the client merely warns (unknown
// fields, unknown events, deprecated shapes): we never want to send those.
//
// VerifyWithClient runs the same stream through the real client, via
// test/peers/agui-verify.mjs, so both judgements can be required of a stream.
package aguicheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Options adjusts Check for streams that are not a whole run.
type Options struct {
	// Fragment checks a slice from inside a run (say, one component's output):
	// the run is taken to have started already, and the stream need not end
	// with a terminal event. Every other rule applies.
	Fragment bool
}

// Check validates a whole event stream (each element one event's JSON object)
// against the AG-UI 1.0 rules and returns every violation found, each a
// *Violation (nil if none). It also enforces ruleagent's own contract: exactly
// one terminal event (RUN_FINISHED or RUN_ERROR), and it is the last event.
func Check(events [][]byte) []error {
	return CheckWith(events, Options{})
}

// CheckJSONL is Check for a stream written one event per line. Blank lines
// are skipped.
func CheckJSONL(r io.Reader) []error {
	return CheckJSONLWith(r, Options{})
}

// CheckJSONLWith is CheckJSONL with options.
func CheckJSONLWith(r io.Reader, opts Options) []error {
	events, err := readJSONL(r)
	if err != nil {
		return []error{err}
	}
	return CheckWith(events, opts)
}

// CheckWith is Check with options.
func CheckWith(events [][]byte, opts Options) []error {
	var errs []error
	report := func(index int, typ string, stage Stage, msg string) {
		errs = append(errs, &Violation{Index: index, Type: typ, Stage: stage, Message: msg})
	}
	chunks := &chunkExpander{}
	verify := newVerifier(opts.Fragment)
	for i, raw := range events {
		ev, typ, problem := decodeFrame(raw)
		if problem != "" {
			report(i, typ, StageFrame, problem)
			continue
		}
		problems, keep := checkCompat(ev, typ)
		for _, p := range problems {
			report(i, typ, StageCompat, p)
		}
		if !keep {
			continue
		}
		if _, known := eventSchemas[typ]; !known {
			report(i, typ, StageSchema, "unknown event type: the client drops it with a warning")
			continue
		}
		for _, p := range checkEventSchema(ev, typ) {
			report(i, typ, StageSchema, p)
		}
		expanded, err := chunks.expand(ev, typ)
		if err != nil {
			report(i, typ, StageChunks, err.Error())
			continue
		}
		for _, e := range expanded {
			if msg := verify.check(e, e["type"].(string)); msg != "" {
				report(i, typ, StageVerify, msg)
			}
		}
	}
	if !opts.Fragment {
		if v := checkTerminal(events); v != nil {
			errs = append(errs, v)
		}
	}
	return errs
}

// decodeFrame decodes one event as the client's SSE transport does: it must
// be a single JSON object whose type is a non-empty string. Numbers stay
// json.Numbers so the integer checks see them as written.
func decodeFrame(raw []byte) (ev map[string]any, typ string, problem string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "", fmt.Sprintf("not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "", "not valid JSON: data after the first value"
	}
	ev, ok := v.(map[string]any)
	if !ok {
		return nil, "", "Invalid event: the frame is not a JSON object."
	}
	typ, ok = ev["type"].(string)
	if !ok || typ == "" {
		return nil, "", "Invalid event: the frame carries no event type."
	}
	return ev, typ, ""
}

// checkTerminal enforces ruleagent's contract, which AG-UI does not: a stream
// is exactly one run, so it ends with one RUN_FINISHED or RUN_ERROR and has
// nothing after it (the client accepts a stream that just stops, and a second
// run after the first).
func checkTerminal(events [][]byte) *Violation {
	if len(events) == 0 {
		return &Violation{Index: -1, Stage: StageContract, Message: "the stream is empty; it must be one run, from RUN_STARTED to RUN_FINISHED or RUN_ERROR"}
	}
	for i, raw := range events {
		_, typ, _ := decodeFrame(raw)
		if typ != "RUN_FINISHED" && typ != "RUN_ERROR" {
			continue
		}
		if i == len(events)-1 {
			return nil
		}
		_, next, _ := decodeFrame(events[i+1])
		return &Violation{Index: i + 1, Type: next, Stage: StageContract,
			Message: fmt.Sprintf("event after the terminal event %d (%s): a ruleagent stream ends at its one terminal event", i, typ)}
	}
	_, last, _ := decodeFrame(events[len(events)-1])
	return &Violation{Index: len(events) - 1, Type: last, Stage: StageContract,
		Message: "the stream ends without a terminal event (RUN_FINISHED or RUN_ERROR)"}
}

// readJSONL splits r into lines, dropping blank ones. Lines may be long
// (a snapshot can be megabytes), so there is no line-length limit.
func readJSONL(r io.Reader) ([][]byte, error) {
	br := bufio.NewReader(r)
	var events [][]byte
	for {
		line, err := br.ReadBytes('\n')
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			events = append(events, trimmed)
		}
		if errors.Is(err, io.EOF) {
			return events, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the event stream: %w", err)
		}
	}
}
