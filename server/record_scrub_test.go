package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// TestRecordsKeepNoSecrets: a secret in what the model was sent and in
// what it answered is not in the stored record; the answer's body is
// scrubbed when the record is written, after the run.
func TestRecordsKeepNoSecrets(t *testing.T) {
	e := newRecEnv(t)
	const secret = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"
	code, body, hdr := e.do("POST", "/api/v1/chains/summariser/run", map[string]any{"input": "summarise " + secret})
	if code != http.StatusOK || !strings.Contains(string(body), "blue widget") {
		t.Fatalf("run: %d %s", code, body)
	}
	if !strings.Contains(e.llm.LastRequest().LastUserText(), secret) {
		t.Fatal("the model was not sent the secret: the test proves nothing")
	}
	rec, err := e.store.GetRecord(context.Background(), hdr.Get("X-Run-Id"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.LLMCalls) != 1 || !strings.Contains(rec.LLMCalls[0].Response.Body, "A-1 is a blue widget, summarise ") {
		t.Fatalf("the record's answer: %+v", rec.LLMCalls)
	}
	for _, m := range rec.Messages {
		if strings.Contains(string(m), secret) {
			t.Errorf("a recorded message holds the secret: %s", m)
		}
	}
	if strings.Contains(rec.Request.Input, secret) || rec.Request.Input != "summarise [REDACTED]" {
		t.Errorf("the recorded input holds the secret: %s", rec.Request.Input)
	}
	if strings.Contains(rec.LLMCalls[0].Response.Body, secret) || strings.Contains(rec.LLMCalls[0].Response.Body, "ghp_1a2B") {
		t.Errorf("the recorded answer holds the secret: %s", rec.LLMCalls[0].Response.Body)
	}
}

// TestRecordIsThereWhenTheRunAnswers: a client that has heard the run
// end finds its record at once: when its terminal event is emitted, the
// record is already among those being written, which GetRecord and
// ListRecords wait for. It was announced only after the run's client
// was answered, and a client reading the record at once found none
// (TestRunsExportAndReplayOffline's "runs list: no recorded runs", now
// and then on a loaded machine).
func TestRecordIsThereWhenTheRunAnswers(t *testing.T) {
	e := newSplitEnv(t, llmtest.Always(llmtest.Reply("Hello.")), true)
	var announced, finished bool
	res, err := e.store.Run(context.Background(), RunRequest{ChainID: "leaky", Input: "hi", Sink: events.SinkFunc(func(ev events.Event) {
		if ev.Type == events.RunFinished {
			finished = true
			e.store.pending.mu.Lock()
			announced = e.store.pending.m[ev.RunID] != nil
			e.store.pending.mu.Unlock()
		}
	})})
	if err != nil || res.Outcome != OutcomeSuccess || !finished {
		t.Fatalf("run: %+v %v", res, err)
	}
	if !announced {
		t.Fatal("the run ended before its record was announced: a client reading it at once finds none")
	}
	if _, err := e.store.GetRecord(context.Background(), res.RunID); err != nil {
		t.Fatal(err)
	}
}
