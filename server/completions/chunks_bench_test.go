package completions

import "testing"

// BenchmarkChunkContent is one content delta encoded as an OpenAI
// chat.completion.chunk and handed to the stream writer.
func BenchmarkChunkContent(b *testing.B) {
	var n int
	c := &Chunks{ID: "chatcmpl-0123456789", Created: 1700000000, Model: "assistant",
		Write: func(p []byte) error { n += len(p); return nil }}
	c.Start()
	b.ReportAllocs()
	for b.Loop() {
		c.Content("Hello, world ")
	}
	if n == 0 {
		b.Fatal("nothing written")
	}
}
