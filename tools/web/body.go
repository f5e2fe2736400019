package web

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/netguard"
)

// RuleDecompression refuses a response whose compression is a bomb: it
// expands beyond the ratio limit, or is compressed more than once.
const RuleDecompression netguard.Rule = "decompression-bomb"

// bombFloor is how much a body may expand to before the ratio is judged:
// small, very regular documents legitimately compress more than any
// sensible ratio.
const bombFloor = 256 << 10

type limits struct {
	maxBytes int64
	maxRatio int
}

// body is a response body read under the limits.
type body struct {
	data []byte
	// truncated: the body was longer than maxBytes; data holds its start.
	truncated bool
	// encoding is the content coding that was decoded ("gzip"), if any.
	encoding string
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// readBody reads a response body, streaming: at most maxBytes are kept
// and at most maxBytes+1 are read from the network, compressed or not. A
// gzip or deflate body is decoded here, not by the transport, so that its
// expansion is watched as it happens.
func readBody(resp *http.Response, lim limits) (body, error) {
	coding, err := contentCoding(resp.Header.Values("Content-Encoding"))
	if err != nil {
		return body{}, err
	}
	wire := &countingReader{r: io.LimitReader(resp.Body, lim.maxBytes+1)}
	var src io.Reader = wire
	if coding != "" {
		zr, err := decoders[coding](wire)
		if err != nil {
			return body{}, tools.Wrap(tools.ErrExecutionFailed, err, "the %s body is corrupt", coding)
		}
		defer zr.Close()
		src = zr
	}
	var buf bytes.Buffer
	chunk := make([]byte, 32<<10)
	for {
		n, rerr := src.Read(chunk)
		buf.Write(chunk[:n])
		if coding != "" && buf.Len() > bombFloor && int64(buf.Len()) > int64(lim.maxRatio)*max(wire.n, 1) {
			return body{}, &tools.Error{Kind: tools.ErrPolicyDenied, Err: &netguard.Refusal{Rule: RuleDecompression,
				Reason: fmt.Sprintf("the %s response expands more than %d times (%d bytes from %d); refused as a decompression bomb", coding, lim.maxRatio, buf.Len(), wire.n)}}
		}
		if int64(buf.Len()) > lim.maxBytes {
			return body{data: buf.Bytes()[:lim.maxBytes], truncated: true, encoding: coding}, nil
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if coding != "" && wire.n > lim.maxBytes && errors.Is(rerr, io.ErrUnexpectedEOF) {
				// The compressed stream itself was cut at the limit.
				return body{data: buf.Bytes(), truncated: true, encoding: coding}, nil
			}
			return body{}, tools.Wrap(tools.ErrExecutionFailed, rerr, "reading the response failed after %d bytes", buf.Len())
		}
	}
	return body{data: buf.Bytes(), encoding: coding}, nil
}

// decoders are the content codings the tool asks for (Accept-Encoding).
var decoders = map[string]func(io.Reader) (io.ReadCloser, error){
	"gzip":    func(r io.Reader) (io.ReadCloser, error) { return gzip.NewReader(r) },
	"deflate": func(r io.Reader) (io.ReadCloser, error) { return zlib.NewReader(r) },
}

// contentCoding reads Content-Encoding. Only one layer of gzip or deflate
// is decoded (the tool asks for nothing else); compressing twice is the
// shape of a nested decompression bomb.
func contentCoding(values []string) (string, error) {
	var codings []string
	for _, v := range values {
		for c := range strings.SplitSeq(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	switch {
	case len(codings) == 0:
		return "", nil
	case len(codings) > 1:
		return "", &tools.Error{Kind: tools.ErrPolicyDenied, Err: &netguard.Refusal{Rule: RuleDecompression,
			Reason: fmt.Sprintf("the response is compressed more than once (%s); refused as a possible decompression bomb", strings.Join(codings, ", "))}}
	case codings[0] == "gzip" || codings[0] == "x-gzip":
		return "gzip", nil
	case codings[0] == "deflate":
		return "deflate", nil
	}
	return "", tools.Errorf(tools.ErrExecutionFailed, "the response uses the content encoding %q, which was not asked for and is not decoded", codings[0])
}
