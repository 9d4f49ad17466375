package native

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fakhq/fak/engines/native/gguf"
)

const testModelID = "fak-tiny"

func startServer(t *testing.T) (*httptest.Server, *Engine) {
	t.Helper()
	m := tinyModel(t, gguf.TensorQ8_0)
	e := newEngine(t, m, Options{})
	srv := httptest.NewServer(NewServer(e, testModelID).Handler())
	t.Cleanup(srv.Close)
	return srv, e
}

func client(srv *httptest.Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

// TestOpenAIClientChat drives the server with the official openai-go client,
// streaming and not, and checks that both give the same text, that usage
// adds up, and that the second identical request is served from native_kv.
func TestOpenAIClientChat(t *testing.T) {
	srv, _ := startServer(t)
	c := client(srv)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model: testModelID,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are terse."),
			openai.UserMessage("Name three prime numbers."),
		},
		MaxCompletionTokens: openai.Int(24),
		Temperature:         openai.Float(0),
	}
	first, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if first.Object != "chat.completion" || len(first.Choices) != 1 {
		t.Fatalf("unexpected response shape: %+v", first)
	}
	text := first.Choices[0].Message.Content
	if first.Usage.CompletionTokens == 0 || first.Usage.CompletionTokens > 24 {
		t.Fatalf("completion tokens = %d, want 1..24", first.Usage.CompletionTokens)
	}
	if first.Usage.TotalTokens != first.Usage.PromptTokens+first.Usage.CompletionTokens {
		t.Fatalf("usage does not add up: %+v", first.Usage)
	}
	if first.Usage.PromptTokensDetails.CachedTokens != 0 {
		t.Fatalf("first request reported %d cached tokens on a cold cache", first.Usage.PromptTokensDetails.CachedTokens)
	}

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(ctx, params)
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	var streamed strings.Builder
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		for _, ch := range chunk.Choices {
			streamed.WriteString(ch.Delta.Content)
		}
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if streamed.String() != text {
		t.Fatalf("streamed text %q differs from the non-streamed %q", streamed.String(), text)
	}
	if chunks < 3 {
		t.Fatalf("only %d chunks: the answer was not streamed", chunks)
	}
	if acc.Usage.PromptTokens != first.Usage.PromptTokens || acc.Usage.CompletionTokens != first.Usage.CompletionTokens {
		t.Fatalf("streamed usage %+v, non-streamed %+v", acc.Usage, first.Usage)
	}
	// The same conversation again: everything but the last prompt token is
	// served from the native KV cache, and reported as cached.
	if got, want := acc.Usage.PromptTokensDetails.CachedTokens, first.Usage.PromptTokens-1; got != want {
		t.Fatalf("cached tokens on the repeat = %d, want %d", got, want)
	}
	if acc.Choices[0].FinishReason == "" {
		t.Fatal("no finish reason in the stream")
	}
}

func TestOpenAIClientCompletions(t *testing.T) {
	srv, e := startServer(t)
	c := client(srv)
	ctx := context.Background()
	ids := e.Model.Tok.Encode("token ids go straight in", true)
	ids64 := make([]int64, len(ids))
	for i, id := range ids {
		ids64[i] = int64(id)
	}
	byIDs, err := c.Completions.New(ctx, openai.CompletionNewParams{
		Model:       testModelID,
		Prompt:      openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: ids64},
		MaxTokens:   openai.Int(10),
		Temperature: openai.Float(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	if byIDs.Usage.PromptTokens != int64(len(ids)) {
		t.Fatalf("prompt tokens = %d, want %d", byIDs.Usage.PromptTokens, len(ids))
	}
	byText, err := c.Completions.New(ctx, openai.CompletionNewParams{
		Model:       testModelID,
		Prompt:      openai.CompletionNewParamsPromptUnion{OfString: openai.String("token ids go straight in")},
		MaxTokens:   openai.Int(10),
		Temperature: openai.Float(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	if byText.Choices[0].Text != byIDs.Choices[0].Text {
		t.Fatalf("text prompt gave %q, the same prompt as ids %q", byText.Choices[0].Text, byIDs.Choices[0].Text)
	}
	if byText.Usage.PromptTokensDetails.CachedTokens != int64(len(ids)-1) {
		t.Fatalf("cached tokens = %d, want %d", byText.Usage.PromptTokensDetails.CachedTokens, len(ids)-1)
	}
	stream := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model:       testModelID,
		Prompt:      openai.CompletionNewParamsPromptUnion{OfString: openai.String("token ids go straight in")},
		MaxTokens:   openai.Int(10),
		Temperature: openai.Float(0),
	})
	var sb strings.Builder
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			sb.WriteString(ch.Text)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if sb.String() != byText.Choices[0].Text {
		t.Fatalf("streamed %q, non-streamed %q", sb.String(), byText.Choices[0].Text)
	}
}

func TestBadRequestsGetOpenAIErrors(t *testing.T) {
	srv, e := startServer(t)
	long := strings.Repeat("x", e.Model.Context+10)
	tests := []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"malformed JSON", "/v1/chat/completions", `{"model": "fak-tiny", "messages": [`, 400, "invalid_json"},
		{"wrong type", "/v1/chat/completions", `{"model": "fak-tiny", "messages": "hi"}`, 400, "invalid_type"},
		{"unknown model", "/v1/chat/completions", `{"model": "gpt-9", "messages": [{"role":"user","content":"hi"}]}`, 400, "model_not_found"},
		{"no messages", "/v1/chat/completions", `{"model": "fak-tiny", "messages": []}`, 400, "invalid_value"},
		{"bad role", "/v1/chat/completions", `{"model": "fak-tiny", "messages": [{"role":"robot","content":"hi"}]}`, 400, "invalid_value"},
		{"prompt longer than context", "/v1/completions", `{"model": "fak-tiny", "prompt": "` + long + `"}`, 400, "context_length_exceeded"},
		{"token id outside vocabulary", "/v1/completions", `{"model": "fak-tiny", "prompt": [1, 99999]}`, 400, "invalid_value"},
		{"n > 1", "/v1/completions", `{"model": "fak-tiny", "prompt": "a", "n": 2}`, 400, "unsupported_value"},
		{"empty body", "/v1/completions", ``, 400, "invalid_json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("error body is not JSON: %v", err)
			}
			if resp.StatusCode != tc.status || body.Error.Code == nil || *body.Error.Code != tc.code || body.Error.Message == "" {
				t.Fatalf("got %d %+v, want %d with code %s", resp.StatusCode, body.Error, tc.status, tc.code)
			}
		})
	}
	// The server still serves after all that.
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz after bad requests: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestMetricsExposeNativeKV(t *testing.T) {
	srv, _ := startServer(t)
	c := client(srv)
	for i := 0; i < 2; i++ {
		_, err := c.Completions.New(context.Background(), openai.CompletionNewParams{
			Model: testModelID, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("same prompt twice")},
			MaxTokens: openai.Int(3), Temperature: openai.Float(0),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	value := func(name string) float64 {
		f, ok := fams[name]
		if !ok {
			t.Fatalf("metric %s missing", name)
		}
		m := f.Metric[0]
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
		return -1
	}
	if v := value("fak_native_kv_queries_total"); v != 2 {
		t.Errorf("kv queries = %v, want 2", v)
	}
	if v := value("fak_native_kv_hits_total"); v != 1 {
		t.Errorf("kv hits = %v, want 1", v)
	}
	if v := value("fak_native_completion_tokens_total"); v != 6 {
		t.Errorf("completion tokens = %v, want 6", v)
	}
	if v := value("fak_native_ttft_seconds"); v != 2 {
		t.Errorf("ttft observations = %v, want 2", v)
	}
	for _, name := range []string{"fak_native_prompt_tokens_total", "fak_native_prefill_tokens_per_second", "fak_native_decode_tokens_per_second", "fak_native_kv_hit_tokens_total"} {
		if value(name) <= 0 {
			t.Errorf("%s = %v, want > 0", name, value(name))
		}
	}
	if l := fams["fak_native_kv_hits_total"].Metric[0].Label; len(l) != 1 || l[0].GetValue() != "native_kv" {
		t.Errorf("kv hits labels = %v, want class=native_kv", l)
	}
}
