package agent

import "slices"

// WithModel returns a client like c whose primary endpoint asks for model
// instead (its failover endpoints keep theirs): a fork that picks another
// model for the turns it runs.
func (c *Client) WithModel(model string) (*Client, error) {
	cfg := c.cfg
	cfg.Endpoints = slices.Clone(cfg.Endpoints)
	cfg.Endpoints[0].Model = model
	return NewClient(cfg)
}
