package native

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The OpenAI wire types the native handler reads and writes. Only the
// fields the engine honours are decoded; unknown fields are ignored, as
// OpenAI-compatible servers do.

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name,omitempty"`
}

// text flattens string or array-of-parts content.
func (m chatMessage) text() (string, error) {
	c := strings.TrimSpace(string(m.Content))
	if c == "" || c == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", errors.New("content must be a string or an array of content parts")
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part type %q is not supported (text only)", p.Type)
		}
		sb.WriteString(p.Text)
	}
	return sb.String(), nil
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// commonParams are the generation fields chat and completions share.
type commonParams struct {
	Model               string          `json:"model"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	Seed                *int64          `json:"seed"`
	N                   *int            `json:"n"`
	Stop                json.RawMessage `json:"stop"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	User                string          `json:"user"`
}

type chatRequest struct {
	commonParams
	Messages []chatMessage `json:"messages"`
}

type completionRequest struct {
	commonParams
	Prompt json.RawMessage `json:"prompt"`
}

// stops decodes "stop": a string or an array of up to four strings.
func (p *commonParams) stops() ([]string, error) {
	if len(p.Stop) == 0 || string(p.Stop) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(p.Stop, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(p.Stop, &many); err != nil {
		return nil, errors.New("stop must be a string or an array of strings")
	}
	if len(many) > 4 {
		return nil, fmt.Errorf("stop has %d sequences, at most 4 are allowed", len(many))
	}
	return many, nil
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type chatChoice struct {
	Index        int       `json:"index"`
	Message      *chatOut  `json:"message,omitempty"`
	Delta        *chatOut  `json:"delta,omitempty"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type chatOut struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []chatChoice `json:"choices"`
	Usage             *usage       `json:"usage,omitempty"`
}

type completionChoice struct {
	Index        int       `json:"index"`
	Text         string    `json:"text"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type completionResponse struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             *usage             `json:"usage,omitempty"`
}

// apiError is the OpenAI error body.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func badRequest(param, code, format string, args ...any) *apiError {
	e := &apiError{Status: 400, Type: "invalid_request_error", Message: fmt.Sprintf(format, args...)}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	return e
}
