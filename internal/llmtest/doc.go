// Package llmtest is a scripted OpenAI-compatible LLM server for tests, so
// that no test needs a real model or the internet.
//
// A test starts a Server with a Script, points its OpenAI client at
// Server.URL, and asserts on the answers and on Server.Requests:
//
//	srv := llmtest.NewServer(t, llmtest.Sequence(
//		llmtest.Calls(llmtest.Call("get_weather", `{"city":"Paris"}`)),
//		llmtest.Reply("It is sunny in Paris."),
//	))
//	// configure the client under test with base URL srv.URL, then run it
//	if got := srv.LastRequest().ToolResults(); len(got) != 1 { ... }
//
// Scripts choose answers from the request alone (its turn, its messages, its
// system prompt), so one server serves concurrent conversations. The wire
// format follows the real API closely enough for the official SDKs, whose
// strictness the package's own tests check with openai-go.
package llmtest
