// VerifyReceipt: receipts this test signs with a key of its own (valid, tampered, malformed), the
// canonical-JSON vector all three SDKs share, ECMAScript's number forms, and receipts a real
// `clarify serve` signed for requests answered here.

package clarify_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	clarify "github.com/clarify-hitl/clarify/sdks/go"
	"github.com/clarify-hitl/clarify/sdks/go/internal/clarifytest"
)

// The same vector is in the Python and TypeScript SDKs' tests: all three must hash alike.
const (
	vectorArguments = `{"b": 1, "a": [1.5, "x", {"d": true, "c": null}], "é": 1e21}`
	vectorCanonical = `{"a":[1.5,"x",{"c":null,"d":true}],"b":1,"é":1e+21}`
	vectorSHA256    = "dcad1a10f57b3958f6988f16f14e55ec393230600662db72530afa46f85d9082"
)

var deployArgs = map[string]any{"env": "prod", "replicas": 3}

func b64(data []byte) string { return base64.RawURLEncoding.EncodeToString(data) }

// signer is an Ed25519 key with a kid, signing receipts as the server does.
type signer struct {
	kid  string
	key  ed25519.PrivateKey
	jwks []byte
}

func newSigner(t *testing.T, kid string) *signer {
	t.Helper()
	public, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{
		{"kty": "OKP", "crv": "Ed25519", "x": b64(public), "kid": kid, "alg": "EdDSA", "use": "sig"},
	}})
	return &signer{kid: kid, key: private, jwks: jwks}
}

func (s *signer) signRaw(header, payload []byte) string {
	input := b64(header) + "." + b64(payload)
	return input + "." + b64(ed25519.Sign(s.key, []byte(input)))
}

func (s *signer) sign(t *testing.T, claims map[string]any) string {
	t.Helper()
	header, _ := json.Marshal(map[string]string{"alg": "EdDSA", "typ": "JWT", "kid": s.kid})
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return s.signRaw(header, payload)
}

func argsSHA(t *testing.T, arguments any) string {
	t.Helper()
	sum, err := clarify.ArgumentsSHA256(arguments)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func claimsOf(t *testing.T, decision, status string) map[string]any {
	return map[string]any{
		"iss": "http://127.0.0.1:7420", "sub": "req_1", "tid": "default", "iat": 1765000000,
		"jti": "rcpt_1", "status": status, "by": "key:alice", "seq": 7,
		"approvals": []map[string]any{{"id": "deploy", "action": "deploy", "decision": decision, "args_sha256": argsSHA(t, deployArgs)}},
	}
}

func wantRefused(t *testing.T, err error, reason string) {
	t.Helper()
	var refused *clarify.ReceiptError
	if !errors.As(err, &refused) {
		t.Fatalf("got %v, want a *ReceiptError with reason %s", err, reason)
	}
	if refused.Reason != reason {
		t.Fatalf("refused for %s (%s), want %s", refused.Reason, refused.Message, reason)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the message is not one line: %q", err.Error())
	}
}

func TestCanonicalJSONMatchesTheVectorTheSDKsShare(t *testing.T) {
	canonical, err := clarify.CanonicalJSON(json.RawMessage(vectorArguments))
	if err != nil || string(canonical) != vectorCanonical {
		t.Fatalf("canonical JSON %s (%v), want %s", canonical, err, vectorCanonical)
	}
	var decoded map[string]any
	_ = json.Unmarshal([]byte(vectorArguments), &decoded)
	if sum := argsSHA(t, decoded); sum != vectorSHA256 {
		t.Errorf("sha256 %s, want %s", sum, vectorSHA256)
	}
	if sum := sha256.Sum256([]byte(vectorCanonical)); hex.EncodeToString(sum[:]) != vectorSHA256 {
		t.Errorf("the vector's own sha256 is %x", sum)
	}
	// Members sort by UTF-16 code units: U+1F600 (the surrogates D83D DE00) before U+E000, the
	// other way round from code points or UTF-8.
	if got, _ := clarify.CanonicalJSON(map[string]int{"\uE000": 2, "\U0001F600": 1}); string(got) != "{\"\U0001F600\":1,\"\uE000\":2}" {
		t.Errorf("UTF-16 order: %s", got)
	}
}

func TestCanonicalNumbersAndStringsAreECMAScripts(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`0`, `0`}, {`-0`, `0`}, {`1`, `1`}, {`-1.5`, `-1.5`}, {`100`, `100`}, {`1e2`, `100`},
		{`0.1`, `0.1`}, {`1e-6`, `0.000001`}, {`1e-7`, `1e-7`}, {`1.5e-7`, `1.5e-7`},
		{`123456789012345678901`, `123456789012345680000`}, {`1e21`, `1e+21`}, {`1.2e22`, `1.2e+22`},
		{`9007199254740993`, `9007199254740992`}, {`0.30000000000000004`, `0.30000000000000004`},
		{`5e-324`, `5e-324`}, {`1.7976931348623157e308`, `1.7976931348623157e+308`},
		{`333333333.33333329`, `333333333.3333333`}, {`1E400`, ``},
		{`"\u20ac\u2028<>&\u0007\u001f\b\f\n\r\t\"\\/"`, `"€` + "\u2028" + `<>&\u0007\u001f\b\f\n\r\t\"\\/"`},
	} {
		got, err := clarify.CanonicalJSON(json.RawMessage(c.in))
		if c.want == "" {
			if err == nil {
				t.Errorf("%s: canonical %s, want an error", c.in, got)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s: canonical %s (%v), want %s", c.in, got, err, c.want)
		}
	}
}

func TestAValidReceiptReturnsItsClaims(t *testing.T) {
	s := newSigner(t, "k1")
	receipt := s.sign(t, claimsOf(t, "approve", "answered"))
	claims, err := clarify.VerifyReceipt(receipt, s.jwks, clarify.ReceiptCheck{Action: "deploy", Arguments: deployArgs})
	if err != nil {
		t.Fatal(err)
	}
	if claims.Sub != "req_1" || claims.Status != "answered" || claims.By != "key:alice" || claims.Seq != 7 || claims.Iat != 1765000000 || claims.Kid != "k1" {
		t.Errorf("claims %+v", claims)
	}
	if len(claims.Approvals) != 1 || claims.Approvals[0].Decision != "approve" {
		t.Errorf("approvals %+v", claims.Approvals)
	}
	// Without an action the arguments must match the only approval; with neither, only the
	// signature is checked, so a denial verifies as a denial.
	if _, err := clarify.VerifyReceipt(receipt, s.jwks, clarify.ReceiptCheck{Arguments: json.RawMessage(`{"replicas":3,"env":"prod"}`)}); err != nil {
		t.Errorf("the arguments alone: %v", err)
	}
	denied, err := clarify.VerifyReceipt(s.sign(t, claimsOf(t, "deny", "answered")), s.jwks, clarify.ReceiptCheck{})
	if err != nil || denied.Approvals[0].Decision != "deny" {
		t.Errorf("a denial with no check: %+v %v", denied, err)
	}
}

func TestOneOfSeveralApprovalsOfAnActionMatchingTheArgumentsIsEnough(t *testing.T) {
	s := newSigner(t, "k1")
	claims := claimsOf(t, "approve", "answered")
	claims["approvals"] = []map[string]any{
		{"id": "a", "action": "rm", "decision": "deny", "args_sha256": argsSHA(t, []string{"x"})},
		{"id": "b", "action": "rm", "decision": "approve", "args_sha256": argsSHA(t, []string{"y"})},
		{"id": "c", "action": "rm", "decision": "approve", "args_sha256": argsSHA(t, []string{"z"})},
	}
	receipt := s.sign(t, claims)
	if _, err := clarify.VerifyReceipt(receipt, s.jwks, clarify.ReceiptCheck{Action: "rm", Arguments: []string{"z"}}); err != nil {
		t.Fatal(err)
	}
	_, err := clarify.VerifyReceipt(receipt, s.jwks, clarify.ReceiptCheck{Action: "rm", Arguments: []string{"x"}})
	wantRefused(t, err, clarify.ReceiptArgumentsDiffer)
	_, err = clarify.VerifyReceipt(receipt, s.jwks, clarify.ReceiptCheck{Arguments: []string{"z"}})
	wantRefused(t, err, clarify.ReceiptActionNeeded)
}

func TestAReceiptThatDoesNotProveTheCallIsRefusedWithItsReason(t *testing.T) {
	s := newSigner(t, "k1")
	valid := s.sign(t, claimsOf(t, "approve", "answered"))
	parts := strings.Split(s.sign(t, claimsOf(t, "deny", "answered")), ".")
	approvedPayload, _ := json.Marshal(claimsOf(t, "approve", "answered"))
	flipped, _ := base64.RawURLEncoding.DecodeString(parts[2])
	flipped[10] ^= 0x01
	withHeader := func(header string) string {
		payload, _ := json.Marshal(claimsOf(t, "approve", "answered"))
		return s.signRaw([]byte(header), payload)
	}
	withPayload := func(payload string) string {
		return s.signRaw([]byte(`{"alg":"EdDSA","kid":"k1"}`), []byte(payload))
	}
	other := newSigner(t, "k2")
	for _, c := range []struct {
		name, receipt string
		check         clarify.ReceiptCheck
		jwks          []byte
		reason        string
	}{
		{"tampered arguments", valid, clarify.ReceiptCheck{Arguments: map[string]any{"env": "dev"}}, s.jwks, clarify.ReceiptArgumentsDiffer},
		{"tampered decision", parts[0] + "." + b64(approvedPayload) + "." + parts[2], clarify.ReceiptCheck{Action: "deploy"}, s.jwks, clarify.ReceiptBadSignature},
		{"a flipped signature byte", parts[0] + "." + parts[1] + "." + b64(flipped), clarify.ReceiptCheck{}, s.jwks, clarify.ReceiptBadSignature},
		{"the same kid, another key", newSigner(t, "k1").sign(t, claimsOf(t, "approve", "answered")), clarify.ReceiptCheck{}, s.jwks, clarify.ReceiptBadSignature},
		{"another key's JWKS", valid, clarify.ReceiptCheck{}, other.jwks, clarify.ReceiptUnknownKid},
		{"a JWKS without keys", valid, clarify.ReceiptCheck{}, []byte(`{"keys":"k1"}`), clarify.ReceiptInvalidJWKS},
		{"a JWKS that is not JSON", valid, clarify.ReceiptCheck{}, []byte(`not json`), clarify.ReceiptInvalidJWKS},
		{"HS256", withHeader(`{"alg":"HS256","kid":"k1"}`), clarify.ReceiptCheck{}, s.jwks, clarify.ReceiptNotEdDSA},
		{"alg none", withHeader(`{"alg":"none","kid":"k1"}`), clarify.ReceiptCheck{}, s.jwks, clarify.ReceiptNotEdDSA},
		{"no kid", withHeader(`{"alg":"EdDSA"}`), clarify.ReceiptCheck{}, s.jwks, clarify.ReceiptMalformed},
		{"empty", "", clarify.ReceiptCheck{}, s.jwks, clarify.ReceiptMalformed},
		{"two parts", "a.b", clarify.ReceiptCheck{}, s.jwks, clarify.ReceiptMalformed},
		{"four parts", "a.b.c.d", clarify.ReceiptCheck{}, s.jwks, clarify.ReceiptMalformed},
		{"not base64url", "!!.e30.AAAA", clarify.ReceiptCheck{}, s.jwks, clarify.ReceiptMalformed},
		{"a cut signature", valid[:len(valid)-8], clarify.ReceiptCheck{}, s.jwks, clarify.ReceiptMalformed},
		{"a payload that is a list", withPayload(`[1]`), clarify.ReceiptCheck{}, s.jwks, clarify.ReceiptMalformed},
		{"a payload without claims", withPayload(`{"sub":"req_1"}`), clarify.ReceiptCheck{}, s.jwks, clarify.ReceiptMalformed},
		{"another action", valid, clarify.ReceiptCheck{Action: "drop_db"}, s.jwks, clarify.ReceiptActionNotInReceipt},
		{"a denial", s.sign(t, claimsOf(t, "deny", "answered")), clarify.ReceiptCheck{Action: "deploy"}, s.jwks, clarify.ReceiptNotApproved},
		{"a revision", s.sign(t, claimsOf(t, "revise", "answered")), clarify.ReceiptCheck{Arguments: deployArgs}, s.jwks, clarify.ReceiptNotApproved},
		{"an expiry", s.sign(t, claimsOf(t, "none", "expired")), clarify.ReceiptCheck{Action: "deploy"}, s.jwks, clarify.ReceiptNotApproved},
	} {
		t.Run(c.name, func(t *testing.T) {
			claims, err := clarify.VerifyReceipt(c.receipt, c.jwks, c.check)
			if claims != nil {
				t.Errorf("claims returned with the error: %+v", claims)
			}
			wantRefused(t, err, c.reason)
		})
	}
}

// Against the real server: a person answers through the API, the record's receipt verifies
// against the server's published keys.

func resolvedReceipt(t *testing.T, agent, alice *clarify.Client, answer clarify.QuestionAnswer, allowEdit bool) (*clarify.Record, string) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	created, err := agent.Create(ctx, clarify.Request{Questions: []clarify.Question{{
		ID: "deploy", Kind: clarify.KindApproval, Text: "Deploy?",
		Action: &clarify.Action{Name: "deploy", Arguments: deployArgs}, AllowEdit: allowEdit,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := alice.Answer(ctx, created.ID, clarify.Answer{Answers: map[string]clarify.QuestionAnswer{"deploy": answer}})
	if err != nil || res.Outcome == nil {
		t.Fatalf("answering: %+v %v", res, err)
	}
	record, err := agent.Get(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if record.Receipt == "" {
		names := []string{}
		for name := range record.Extra {
			names = append(names, name)
		}
		t.Fatalf("the resolved record has no `receipt` (unnamed fields: %v); is CLARIFY_BIN a server that signs receipts?", names)
	}
	if res.Outcome.Receipt != record.Receipt || record.Outcome == nil || record.Outcome.Receipt != record.Receipt {
		t.Errorf("the outcome's receipt is not the record's")
	}
	return record, record.Receipt
}

func serverJWKS(t *testing.T, s *clarifytest.Server) []byte {
	t.Helper()
	resp, err := http.Get(s.URL + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var jwks struct {
		Keys []struct{ Kty, Crv string } `json:"keys"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &jwks) != nil || len(jwks.Keys) == 0 {
		t.Fatalf("GET /.well-known/jwks.json: %d %s", resp.StatusCode, body)
	}
	for _, key := range jwks.Keys {
		if key.Kty != "OKP" || key.Crv != "Ed25519" {
			t.Errorf("a published key is %s %s, not OKP Ed25519", key.Kty, key.Crv)
		}
	}
	return body
}

func TestARealReceiptVerifiesForItsActionAndArgumentsOnly(t *testing.T) {
	s := clarifytest.Start(t)
	agent := s.Client("agent", "go-agent")
	alice := s.Client("responder", "alice")

	record, receipt := resolvedReceipt(t, agent, alice, clarify.QuestionAnswer{Decision: clarify.DecisionApprove}, false)
	jwks := serverJWKS(t, s)
	claims, err := clarify.VerifyReceipt(receipt, jwks, clarify.ReceiptCheck{Action: "deploy", Arguments: deployArgs})
	if err != nil {
		t.Fatal(err)
	}
	if claims.Sub != record.ID || claims.Status != "answered" || claims.Iss != s.URL || !strings.Contains(claims.By, "alice") {
		t.Errorf("claims %+v", claims)
	}
	if len(claims.Approvals) != 1 || claims.Approvals[0].ID != "deploy" || claims.Approvals[0].Action != "deploy" || claims.Approvals[0].Decision != "approve" {
		t.Errorf("approvals %+v", claims.Approvals)
	}
	_, err = clarify.VerifyReceipt(receipt, jwks, clarify.ReceiptCheck{Action: "deploy", Arguments: map[string]any{"env": "prod", "replicas": 4}})
	wantRefused(t, err, clarify.ReceiptArgumentsDiffer)
	_, err = clarify.VerifyReceipt(receipt, jwks, clarify.ReceiptCheck{Action: "drop_database"})
	wantRefused(t, err, clarify.ReceiptActionNotInReceipt)

	t.Run("edited arguments", func(t *testing.T) {
		edited := map[string]any{"env": "staging", "replicas": 1}
		_, receipt := resolvedReceipt(t, agent, alice, clarify.QuestionAnswer{Decision: clarify.DecisionApprove, EditedArguments: edited}, true)
		if _, err := clarify.VerifyReceipt(receipt, jwks, clarify.ReceiptCheck{Action: "deploy", Arguments: edited}); err != nil {
			t.Errorf("the edited arguments: %v", err)
		}
		_, err := clarify.VerifyReceipt(receipt, jwks, clarify.ReceiptCheck{Action: "deploy", Arguments: deployArgs})
		wantRefused(t, err, clarify.ReceiptArgumentsDiffer)
	})

	t.Run("denied", func(t *testing.T) {
		_, receipt := resolvedReceipt(t, agent, alice, clarify.QuestionAnswer{Decision: clarify.DecisionDeny, Reason: "no"}, false)
		claims, err := clarify.VerifyReceipt(receipt, jwks, clarify.ReceiptCheck{})
		if err != nil || claims.Approvals[0].Decision != "deny" {
			t.Errorf("a denial with no check: %+v %v", claims, err)
		}
		_, err = clarify.VerifyReceipt(receipt, jwks, clarify.ReceiptCheck{Action: "deploy", Arguments: deployArgs})
		wantRefused(t, err, clarify.ReceiptNotApproved)
	})
}
