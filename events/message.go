package events

// Message is one conversation message, shaped like an AG-UI message. It is
// the conversation type of every layer: the engine converts it to the LLM's
// wire format when it builds a request.
type Message struct {
	ID   string `json:"id,omitempty"`
	Role Role   `json:"role"`
	// Content is the text. When Parts is set (multimodal user input), Parts
	// is the content and Content holds their text joined, for display.
	Content string        `json:"content,omitempty"`
	Parts   []ContentPart `json:"parts,omitempty"`
	Name    string        `json:"name,omitempty"`
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID links a tool message to its call.
	ToolCallID string `json:"toolCallId,omitempty"`
	// Reasoning is an assistant message's reasoning text, kept so that
	// providers that want it back (reasoning_content) get it.
	Reasoning string `json:"reasoning,omitempty"`
	// Error marks a tool message whose call failed or was refused.
	Error string `json:"error,omitempty"`
}

// Role is a message role.
type Role string

// Message roles.
const (
	RoleSystem    Role = "system"
	RoleDeveloper Role = "developer"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is a function call made by the model.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ContentPart is one part of multimodal content.
type ContentPart struct {
	// Type is "text" or "image".
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// URL of an image: an http(s) URL or a data: URL.
	URL string `json:"url,omitempty"`
	// Detail is the OpenAI image detail hint (auto, low, high).
	Detail string `json:"detail,omitempty"`
}
