package ask

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    Question
		want string
	}{
		{"confirmation", Question{Message: "Delete the branch?"}, `"Delete the branch?" (accept or decline)`},
		{"form", Question{Message: "What is your name?", Schema: json.RawMessage(
			`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]}`)},
			`"What is your name?" (fields: age integer, name string required)`},
		{"enum", Question{Message: "Size?", Schema: json.RawMessage(
			`{"type":"object","properties":{"size":{"type":"string","enum":["S","M"]}}}`)},
			`"Size?" (fields: size one of "S"|"M")`},
		{"empty object schema", Question{Message: "OK?", Schema: json.RawMessage(`{"type":"object"}`)}, `"OK?" (accept or decline)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Describe(tc.q); got != tc.want {
				t.Errorf("Describe = %s, want %s", got, tc.want)
			}
		})
	}
	long := Describe(Question{Message: strings.Repeat("x", 2000)})
	if len(long) > maxDescribed+len("…") {
		t.Errorf("a long question is quoted whole (%d bytes)", len(long))
	}
}

func TestAskWithoutAsker(t *testing.T) {
	q := Question{ID: "user_name", Message: "What is your name?"}
	_, err := Ask(context.Background(), q)
	var na *NotAskedError
	if !errors.Is(err, ErrNoOneToAsk) || !errors.As(err, &na) || na.Question.ID != "user_name" {
		t.Fatalf("err = %v, want a *NotAskedError for the question", err)
	}
	if !strings.Contains(err.Error(), "What is your name?") {
		t.Errorf("the error does not say what was asked: %v", err)
	}
}

func TestAskerShadowing(t *testing.T) {
	yes := AskerFunc(func(context.Context, Question) (Answer, error) {
		return Answer{Action: Accept, Content: json.RawMessage(`{"ok":true}`)}, nil
	})
	ctx := WithAsker(context.Background(), yes)
	a, err := Ask(ctx, Question{Message: "OK?"})
	if err != nil || a.Action != Accept || string(a.Content) != `{"ok":true}` {
		t.Fatalf("Ask = %+v, %v", a, err)
	}
	// A callee that must not reach its caller's person.
	if _, err := Ask(WithAsker(ctx, nil), Question{Message: "OK?"}); !errors.Is(err, ErrNoOneToAsk) {
		t.Errorf("WithAsker(nil) did not hide the outer asker: %v", err)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		q  Question
		ok bool
	}{
		{Question{Message: "OK?"}, true},
		{Question{Message: "Name?", Schema: json.RawMessage(`{"type":"object","properties":{}}`)}, true},
		{Question{}, false},
		{Question{Message: "Name?", Schema: json.RawMessage(`{"type":"string"}`)}, false},
		{Question{Message: "Name?", Schema: json.RawMessage(`{`)}, false},
	} {
		if err := Check(tc.q); (err == nil) != tc.ok {
			t.Errorf("Check(%+v) = %v, want ok=%v", tc.q, err, tc.ok)
		}
	}
	if _, err := Ask(context.Background(), Question{}); err == nil || errors.Is(err, ErrNoOneToAsk) {
		t.Errorf("a question without a message was not refused as such: %v", err)
	}
}

func TestKey(t *testing.T) {
	if (Question{}).Key() != DefaultID || (Question{ID: "a"}).Key() != "a" {
		t.Error("Key does not default to DefaultID")
	}
}
