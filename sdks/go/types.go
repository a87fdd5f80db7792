// The API's JSON as Go types, mirroring the OpenAPI document (`api/openapi.json`): the create
// body (Request, Question, Option, Action, Field, Block), the record and its outcome (Record,
// Outcome, QuestionOutcome, Vote), answers, pages and grants. Every object keeps the fields it
// does not name in Extra, so nothing a newer server sends is lost.

package clarify

import (
	"encoding/json"
	"time"
)

// Question kinds.
const (
	KindOpen     = "open"
	KindSingle   = "single"
	KindMulti    = "multi"
	KindApproval = "approval"
	KindForm     = "form"
)

// Request statuses.
const (
	StatusPending   = "pending"
	StatusAnswered  = "answered"
	StatusSkipped   = "skipped"
	StatusExpired   = "expired"
	StatusCancelled = "cancelled"
)

// Approval scopes and decisions.
const (
	ScopeOnce    = "once"
	ScopeSession = "session"
	ScopeAlways  = "always"

	DecisionApprove = "approve"
	DecisionDeny    = "deny"
	DecisionRevise  = "revise"
)

// Request is the body of a create (`POST /v1/requests`): one to five questions answered
// together, and what the person is shown with them.
type Request struct {
	Questions []Question `json:"questions"`
	// Context is shown to the person: a string, or any value that encodes to a JSON object.
	Context any     `json:"context,omitempty"`
	Display []Block `json:"display,omitempty"`
	// Summary is one line (at most 120 characters) naming what is asked; derived when empty.
	Summary    string   `json:"summary,omitempty"`
	Session    string   `json:"session,omitempty"`
	Agent      string   `json:"agent,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	ToolCallID string   `json:"tool_call_id,omitempty"`
	// TimeoutSeconds is how long the person has: nil is the server's default (an hour), 0 never
	// expires. Seconds gives a pointer to a literal.
	TimeoutSeconds *int64 `json:"timeout_seconds,omitempty"`
	// AllowSkip is nil for the default (true).
	AllowSkip *bool `json:"allow_skip,omitempty"`
	// Responders names who may answer (`group:NAME` for a group); empty lets every responder.
	Responders []string `json:"responders,omitempty"`
	// CallbackURL receives the outcome, signed (see VerifyWebhook).
	CallbackURL string `json:"callback_url,omitempty"`
	// IdempotencyKey makes a repeated create return the original request; Create and Ask fill
	// in a fresh one when it is empty.
	IdempotencyKey       string          `json:"idempotency_key,omitempty"`
	ApprovalsRequired    int             `json:"approvals_required,omitempty"`
	EscalateAfterSeconds int64           `json:"escalate_after_seconds,omitempty"`
	EscalateTo           []string        `json:"escalate_to,omitempty"`
	RemindEverySeconds   int64           `json:"remind_every_seconds,omitempty"`
	OnTimeout            json.RawMessage `json:"on_timeout,omitempty"`
	OnBehalfOf           string          `json:"on_behalf_of,omitempty"`
	Revises              string          `json:"revises,omitempty"`
	Risk                 string          `json:"risk,omitempty"`
	Dedupe               bool            `json:"dedupe,omitempty"`
	Extra                Extra           `json:"-"`
}

// Seconds returns a pointer to n, for Request.TimeoutSeconds.
func Seconds(n int64) *int64 { return &n }

// Bool returns a pointer to b, for the optional booleans.
func Bool(b bool) *bool { return &b }

// Question is one question, as sent in a Request and as validated in a Record (ids filled in,
// options with ids).
type Question struct {
	// ID defaults to q1, q2, ... by position.
	ID     string `json:"id,omitempty"`
	Header string `json:"header,omitempty"`
	Text   string `json:"text"`
	// Kind is KindOpen, KindSingle, KindMulti, KindApproval or KindForm; empty means open (or
	// single when Options are given).
	Kind    string   `json:"kind,omitempty"`
	Options []Choice `json:"options,omitempty"`
	// AllowOther (single and multi) is nil for the default (true).
	AllowOther  *bool  `json:"allow_other,omitempty"`
	Recommended string `json:"recommended,omitempty"`
	// Action, Scopes and AllowEdit are an approval's.
	Action    *Action  `json:"action,omitempty"`
	Scopes    []string `json:"scopes,omitempty"`
	AllowEdit bool     `json:"allow_edit,omitempty"`
	// Fields are a form's (or Schema, a flat JSON Schema object, instead).
	Fields []Field         `json:"fields,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Extra  Extra           `json:"-"`
}

// Choice is one option of a single or multi question (or a choice field); an empty ID is
// derived from the label.
type Choice struct {
	ID          string `json:"id,omitempty"`
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
	Extra       Extra  `json:"-"`
}

// Action is what an approval asks to do: a tool name and its arguments.
type Action struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
	Extra     Extra          `json:"-"`
}

// Field is one input of a form question.
type Field struct {
	ID          string          `json:"id"`
	Label       string          `json:"label"`
	Type        string          `json:"type"`
	Required    *bool           `json:"required,omitempty"`
	Description string          `json:"description,omitempty"`
	Default     json.RawMessage `json:"default,omitempty"`
	Format      string          `json:"format,omitempty"`
	Pattern     string          `json:"pattern,omitempty"`
	MinLength   *int            `json:"min_length,omitempty"`
	MaxLength   *int            `json:"max_length,omitempty"`
	Minimum     *float64        `json:"minimum,omitempty"`
	Maximum     *float64        `json:"maximum,omitempty"`
	MinItems    *int            `json:"min_items,omitempty"`
	MaxItems    *int            `json:"max_items,omitempty"`
	Options     []Choice        `json:"options,omitempty"`
	Extra       Extra           `json:"-"`
}

// Block is one display block shown above the questions; Type says which fields it uses:
// markdown (Text), diff (Path, Diff, or Before and After), code (Language, Text), fields
// (Items), image (Data when sent; URL, MediaType, Bytes in a record), link (URL).
type Block struct {
	Type      string `json:"type"`
	Title     string `json:"title,omitempty"`
	Text      string `json:"text,omitempty"`
	Path      string `json:"path,omitempty"`
	Diff      string `json:"diff,omitempty"`
	Before    string `json:"before,omitempty"`
	After     string `json:"after,omitempty"`
	Language  string `json:"language,omitempty"`
	Items     []Fact `json:"items,omitempty"`
	Data      string `json:"data,omitempty"`
	Alt       string `json:"alt,omitempty"`
	URL       string `json:"url,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Bytes     int64  `json:"bytes,omitempty"`
	Extra     Extra  `json:"-"`
}

// Fact is one row of a fields block.
type Fact struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Record is a request as the API returns it; Outcome is set once it is resolved.
type Record struct {
	ID                   string          `json:"id"`
	Status               string          `json:"status"`
	Questions            []Question      `json:"questions"`
	Context              any             `json:"context,omitempty"`
	Display              []Block         `json:"display,omitempty"`
	Summary              string          `json:"summary,omitempty"`
	Session              string          `json:"session,omitempty"`
	Agent                string          `json:"agent,omitempty"`
	Tags                 []string        `json:"tags"`
	ToolCallID           string          `json:"tool_call_id,omitempty"`
	AllowSkip            bool            `json:"allow_skip"`
	TimeoutSeconds       int64           `json:"timeout_seconds"`
	Responders           []string        `json:"responders,omitempty"`
	CallbackURL          string          `json:"callback_url,omitempty"`
	ApprovalsRequired    int             `json:"approvals_required"`
	Votes                []Vote          `json:"votes"`
	EscalateAfterSeconds *int64          `json:"escalate_after_seconds,omitempty"`
	EscalateTo           []string        `json:"escalate_to,omitempty"`
	EscalatedAt          *time.Time      `json:"escalated_at,omitempty"`
	RemindEverySeconds   *int64          `json:"remind_every_seconds,omitempty"`
	NextReminderAt       *time.Time      `json:"next_reminder_at,omitempty"`
	OnTimeout            json.RawMessage `json:"on_timeout,omitempty"`
	OnBehalfOf           string          `json:"on_behalf_of,omitempty"`
	Revises              string          `json:"revises,omitempty"`
	Risk                 string          `json:"risk,omitempty"`
	StepUp               bool            `json:"step_up,omitempty"`
	CreatedAt            time.Time       `json:"created_at"`
	// ExpiresAt is nil when the request never expires.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// AnswerURL is the signed single-use answer link, shown to agents and admins.
	AnswerURL  string     `json:"answer_url,omitempty"`
	AnsweredBy string     `json:"answered_by,omitempty"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
	Outcome    *Outcome   `json:"outcome,omitempty"`
	// Receipt is, once resolved, the signed receipt of the decision (a compact JWS); see
	// VerifyReceipt.
	Receipt string `json:"receipt,omitempty"`
	Extra   Extra  `json:"-"`
}

// Resolved reports whether the request is no longer pending.
func (r *Record) Resolved() bool { return r.Status != StatusPending }

// Outcome is what an agent receives once a request is resolved: answered, skipped, expired or
// cancelled (Note tells the model what happened when it was not answered).
type Outcome struct {
	RequestID string            `json:"request_id"`
	Status    string            `json:"status"`
	Questions []QuestionOutcome `json:"questions"`
	// AnsweredBy is the name of the key or person who answered; empty for expiry and links.
	AnsweredBy string `json:"answered_by,omitempty"`
	// AnsweredVia is where the answer came from: inbox, api, link, slack, mcp, ...
	AnsweredVia    string    `json:"answered_via,omitempty"`
	Note           string    `json:"note,omitempty"`
	ResolvedAt     time.Time `json:"resolved_at"`
	DefaultApplied bool      `json:"default_applied,omitempty"`
	Votes          []Vote    `json:"votes,omitempty"`
	// Receipt is the signed receipt of the decision (a compact JWS); see VerifyReceipt.
	Receipt string `json:"receipt,omitempty"`
	Extra   Extra  `json:"-"`
}

// Question returns the outcome of the question with the given id.
func (o *Outcome) Question(id string) (*QuestionOutcome, bool) {
	for i := range o.Questions {
		if o.Questions[i].ID == id {
			return &o.Questions[i], true
		}
	}
	return nil, false
}

// Text is the first question's answer as text: the chosen label, the typed text, or the
// decision (several labels joined by ", "); empty when unanswered.
func (o *Outcome) Text() string {
	if len(o.Questions) == 0 {
		return ""
	}
	return o.Questions[0].Text()
}

// QuestionOutcome is one question's part of an outcome.
type QuestionOutcome struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	Kind     string `json:"kind"`
	// ChoicesOffered are the labels offered (approve, deny, revise for an approval).
	ChoicesOffered []string `json:"choices_offered"`
	// Answer is the chosen label, the labels (multi), the text, the decision, or a form's values
	// object; JSON null when unanswered. Text, Labels and Values read it.
	Answer json.RawMessage `json:"answer"`
	// Mode is option, other, text, decision, form or default; empty when unanswered.
	Mode            string         `json:"mode,omitempty"`
	Decision        string         `json:"decision,omitempty"`
	Scope           string         `json:"scope,omitempty"`
	EditedArguments map[string]any `json:"edited_arguments,omitempty"`
	Reason          string         `json:"reason,omitempty"`
	Extra           Extra          `json:"-"`
}

// Text is the answer as text: a label, the typed text, the decision, or a multi question's
// labels joined by ", ".
func (q *QuestionOutcome) Text() string {
	var s string
	if json.Unmarshal(q.Answer, &s) == nil {
		return s
	}
	if labels := q.Labels(); len(labels) > 0 {
		out := labels[0]
		for _, l := range labels[1:] {
			out += ", " + l
		}
		return out
	}
	return ""
}

// Labels is a multi question's chosen labels (a single label as a list of one).
func (q *QuestionOutcome) Labels() []string {
	var list []string
	if json.Unmarshal(q.Answer, &list) == nil {
		return list
	}
	var s string
	if json.Unmarshal(q.Answer, &s) == nil && s != "" {
		return []string{s}
	}
	return nil
}

// Values decodes a form's values object into v (a pointer to a struct or a map).
func (q *QuestionOutcome) Values(v any) error { return json.Unmarshal(q.Answer, v) }

// Vote is one responder's vote on a quorum request.
type Vote struct {
	By       string    `json:"by"`
	Decision string    `json:"decision"`
	Scope    string    `json:"scope"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
	Extra    Extra     `json:"-"`
}

// Answer is the body of `POST /v1/requests/{id}/answer`: an answer per question id, or Skip.
type Answer struct {
	Answers map[string]QuestionAnswer `json:"answers,omitempty"`
	Skip    bool                      `json:"skip,omitempty"`
	Extra   Extra                     `json:"-"`
}

// AnswerOne is the Answer of a request's single question, q1.
func AnswerOne(a QuestionAnswer) Answer {
	return Answer{Answers: map[string]QuestionAnswer{"q1": a}}
}

// QuestionAnswer answers one question; set the fields of its kind: Option or Other (single),
// Options and optionally Other (multi), Text (open), Decision with Scope, EditedArguments and
// Reason (approval), Values (form).
type QuestionAnswer struct {
	Option          string         `json:"option,omitempty"`
	Options         []string       `json:"options,omitempty"`
	Other           string         `json:"other,omitempty"`
	Text            string         `json:"text,omitempty"`
	Decision        string         `json:"decision,omitempty"`
	Scope           string         `json:"scope,omitempty"`
	EditedArguments map[string]any `json:"edited_arguments,omitempty"`
	Reason          string         `json:"reason,omitempty"`
	Values          map[string]any `json:"values,omitempty"`
	Extra           Extra          `json:"-"`
}

// AnswerResult is what an answer did: resolved the request (Outcome), or, on a quorum request
// that needs more approvals, counted a vote (Record, still pending, with the votes so far).
type AnswerResult struct {
	Outcome *Outcome
	Record  *Record
}

// Page is one page of requests, newest first.
type Page struct {
	Requests []Record `json:"requests"`
	// NextCursor is the cursor of the next page; empty on the last.
	NextCursor string `json:"next_cursor,omitempty"`
	Extra      Extra  `json:"-"`
}

// Grant is a person's approval of a tool with its arguments for a session (ScopeSession) or the
// whole tenant (ScopeAlways), so an identical call runs without asking again.
type Grant struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Scope     string          `json:"scope"`
	Session   string          `json:"session,omitempty"`
	GrantedBy string          `json:"granted_by,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	ExpiresAt *time.Time      `json:"expires_at,omitempty"`
	MaxUses   *int            `json:"max_uses,omitempty"`
	Uses      int             `json:"uses"`
	Extra     Extra           `json:"-"`
}

// GrantCheck is the answer of CheckGrant: whether a grant lets the call run without asking,
// and which.
type GrantCheck struct {
	Granted bool   `json:"granted"`
	Grant   *Grant `json:"grant,omitempty"`
	Extra   Extra  `json:"-"`
}

// The (Un)MarshalJSON pairs keeping Extra, one per type.

func (v *Request) UnmarshalJSON(b []byte) (err error) {
	type plain Request
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v Request) MarshalJSON() ([]byte, error) {
	type plain Request
	return encodeKeeping(plain(v), v.Extra)
}

func (v *Question) UnmarshalJSON(b []byte) (err error) {
	type plain Question
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v Question) MarshalJSON() ([]byte, error) {
	type plain Question
	return encodeKeeping(plain(v), v.Extra)
}

func (v *Choice) UnmarshalJSON(b []byte) (err error) {
	// A bare string is the shorthand for an option with that label.
	var label string
	if json.Unmarshal(b, &label) == nil {
		*v = Choice{Label: label}
		return nil
	}
	type plain Choice
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v Choice) MarshalJSON() ([]byte, error) {
	type plain Choice
	return encodeKeeping(plain(v), v.Extra)
}

func (v *Action) UnmarshalJSON(b []byte) (err error) {
	type plain Action
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v Action) MarshalJSON() ([]byte, error) {
	type plain Action
	if v.Arguments == nil {
		v.Arguments = map[string]any{}
	}
	return encodeKeeping(plain(v), v.Extra)
}

func (v *Field) UnmarshalJSON(b []byte) (err error) {
	type plain Field
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v Field) MarshalJSON() ([]byte, error) {
	type plain Field
	return encodeKeeping(plain(v), v.Extra)
}

func (v *Block) UnmarshalJSON(b []byte) (err error) {
	type plain Block
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v Block) MarshalJSON() ([]byte, error) {
	type plain Block
	return encodeKeeping(plain(v), v.Extra)
}

func (v *Record) UnmarshalJSON(b []byte) (err error) {
	type plain Record
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v Record) MarshalJSON() ([]byte, error) {
	type plain Record
	return encodeKeeping(plain(v), v.Extra)
}

func (v *Outcome) UnmarshalJSON(b []byte) (err error) {
	type plain Outcome
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v Outcome) MarshalJSON() ([]byte, error) {
	type plain Outcome
	return encodeKeeping(plain(v), v.Extra)
}

func (v *QuestionOutcome) UnmarshalJSON(b []byte) (err error) {
	type plain QuestionOutcome
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v QuestionOutcome) MarshalJSON() ([]byte, error) {
	type plain QuestionOutcome
	return encodeKeeping(plain(v), v.Extra)
}

func (v *Vote) UnmarshalJSON(b []byte) (err error) {
	type plain Vote
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v Vote) MarshalJSON() ([]byte, error) { type plain Vote; return encodeKeeping(plain(v), v.Extra) }

func (v *Answer) UnmarshalJSON(b []byte) (err error) {
	type plain Answer
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v Answer) MarshalJSON() ([]byte, error) {
	type plain Answer
	return encodeKeeping(plain(v), v.Extra)
}

func (v *QuestionAnswer) UnmarshalJSON(b []byte) (err error) {
	type plain QuestionAnswer
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v QuestionAnswer) MarshalJSON() ([]byte, error) {
	type plain QuestionAnswer
	return encodeKeeping(plain(v), v.Extra)
}

func (v *Page) UnmarshalJSON(b []byte) (err error) {
	type plain Page
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v Page) MarshalJSON() ([]byte, error) { type plain Page; return encodeKeeping(plain(v), v.Extra) }

func (v *Grant) UnmarshalJSON(b []byte) (err error) {
	type plain Grant
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v Grant) MarshalJSON() ([]byte, error) {
	type plain Grant
	return encodeKeeping(plain(v), v.Extra)
}

func (v *GrantCheck) UnmarshalJSON(b []byte) (err error) {
	type plain GrantCheck
	v.Extra, err = decodeKeeping(b, (*plain)(v))
	return err
}
func (v GrantCheck) MarshalJSON() ([]byte, error) {
	type plain GrantCheck
	return encodeKeeping(plain(v), v.Extra)
}
