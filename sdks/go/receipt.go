// Checking a receipt: proof, signed by the server, of what a person decided.
//
// Every resolved request carries Receipt, a compact JWS (RFC 7515) signed with Ed25519 (alg
// EdDSA, a kid naming the key). Its claims say which request (sub), how it ended (status), who
// resolved it (by), and for each approval question the action, the decision and args_sha256: the
// SHA-256 of the RFC 8785 (JCS) canonical JSON of the arguments approved (the edited ones where
// the person edited them). An executor holding the receipt and the server's public keys
// (`GET /.well-known/jwks.json`) can check, without asking the server, that the exact call it is
// about to make was approved.

package clarify

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Reasons a receipt is refused: the Reason of a *ReceiptError.
const (
	ReceiptMalformed          = "malformed"
	ReceiptNotEdDSA           = "not_eddsa"
	ReceiptUnknownKid         = "unknown_kid"
	ReceiptBadSignature       = "bad_signature"
	ReceiptInvalidJWKS        = "invalid_jwks"
	ReceiptActionNotInReceipt = "action_not_in_receipt"
	// ReceiptActionNeeded: arguments without an action, and the receipt holds several approvals.
	ReceiptActionNeeded    = "action_needed"
	ReceiptNotApproved     = "not_approved"
	ReceiptArgumentsDiffer = "arguments_differ"
)

// ReceiptError is why VerifyReceipt refused a receipt: do not act on it. Message is one line.
//
//	var e *clarify.ReceiptError
//	if errors.As(err, &e) && e.Reason == clarify.ReceiptNotApproved { ... }
type ReceiptError struct {
	Reason  string
	Message string
}

func (e *ReceiptError) Error() string { return "clarify: " + e.Message }

// ReceiptApproval is one approval question of the request, as the receipt states it.
type ReceiptApproval struct {
	// ID is the question's id.
	ID string `json:"id"`
	// Action is the tool or action name.
	Action string `json:"action"`
	// Decision is approve, deny, revise, or none when nobody decided.
	Decision string `json:"decision"`
	// ArgsSHA256 is the lowercase hex SHA-256 of the canonical JSON of the arguments approved.
	ArgsSHA256 string `json:"args_sha256"`
}

// ReceiptClaims are a receipt's claims, once its signature is verified.
type ReceiptClaims struct {
	// Iss is the server's public URL.
	Iss string `json:"iss"`
	// Sub is the request's id.
	Sub string `json:"sub"`
	// Tid is the request's tenant.
	Tid string `json:"tid"`
	// Iat is when it was signed, in Unix seconds.
	Iat int64 `json:"iat"`
	// Jti is the receipt's unique id.
	Jti string `json:"jti"`
	// Status is how the request ended: answered, skipped, expired or cancelled.
	Status string `json:"status"`
	// By is who resolved it: key:<name>, or system.
	By string `json:"by"`
	// Seq is the resolution's position in the audit chain.
	Seq       int64             `json:"seq"`
	Approvals []ReceiptApproval `json:"approvals"`
	// Kid is the key that signed it (from the header).
	Kid string `json:"-"`
}

// ReceiptCheck is what VerifyReceipt checks beyond the signature; the zero value checks nothing
// more.
type ReceiptCheck struct {
	// Action, when set, must have an approval in the receipt whose decision is approve, on an
	// answered request.
	Action string
	// Arguments, when not nil, are the arguments about to be used: an approval (of Action, or
	// the receipt's only approval when Action is empty) must have approved exactly these,
	// compared through args_sha256. Any value encoding/json marshals; json.RawMessage for JSON
	// text.
	Arguments any
}

// VerifyReceipt verifies a receipt's signature against jwks (the body of the server's
// /.well-known/jwks.json) and returns its claims, after the checks check asks for. It returns a
// *ReceiptError naming the reason when any check fails.
func VerifyReceipt(receipt string, jwks []byte, check ReceiptCheck) (*ReceiptClaims, error) {
	parts := strings.Split(strings.TrimSpace(receipt), ".")
	if len(parts) != 3 {
		return nil, malformed("it is not a compact JWS (three base64url parts joined by dots)")
	}
	headerJSON, err := b64url(parts[0], "header")
	if err != nil {
		return nil, err
	}
	var header map[string]any
	if json.Unmarshal(headerJSON, &header) != nil || header == nil {
		return nil, malformed("its header is not a JSON object")
	}
	if alg, _ := header["alg"].(string); alg != "EdDSA" {
		shown, _ := json.Marshal(header["alg"])
		return nil, &ReceiptError{ReceiptNotEdDSA, fmt.Sprintf("the receipt is signed with alg %s; only EdDSA (Ed25519) is accepted", shown)}
	}
	kid, _ := header["kid"].(string)
	if kid == "" {
		return nil, malformed("its header names no key (`kid`)")
	}
	payload, err := b64url(parts[1], "payload")
	if err != nil {
		return nil, err
	}
	signature, err := b64url(parts[2], "signature")
	if err != nil {
		return nil, err
	}
	if len(signature) != ed25519.SignatureSize {
		return nil, malformed(fmt.Sprintf("its signature is %d bytes, not Ed25519's 64", len(signature)))
	}
	key, err := publicKey(jwks, kid)
	if err != nil {
		return nil, err
	}
	if !ed25519.Verify(key, []byte(parts[0]+"."+parts[1]), signature) {
		return nil, &ReceiptError{ReceiptBadSignature, fmt.Sprintf("bad signature: the receipt was not signed by key %q or was changed after", kid)}
	}
	claims, err := readClaims(payload)
	if err != nil {
		return nil, err
	}
	claims.Kid = kid
	if check.Action != "" || check.Arguments != nil {
		if err := checkApproval(claims, check); err != nil {
			return nil, err
		}
	}
	return claims, nil
}

// CanonicalJSON is v as RFC 8785 (JCS) canonical JSON: members sorted by their names' UTF-16
// code units, no spaces, numbers as ECMAScript writes them. v is first marshalled by
// encoding/json (so structs, maps and json.RawMessage all work), then read back with its numbers
// kept as text.
//
// The module stays free of dependencies outside the standard library (its tests run with no
// module proxy), so this is a short canonicalizer of its own rather than a JCS package.
func CanonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("clarify: the arguments cannot be written as JSON: %w", err)
	}
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.UseNumber()
	var tree any
	if err := decoder.Decode(&tree); err != nil {
		return nil, fmt.Errorf("clarify: the arguments cannot be read back as JSON: %w", err)
	}
	var out bytes.Buffer
	if err := writeCanonical(&out, tree); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// ArgumentsSHA256 is the lowercase hex SHA-256 of the arguments' canonical JSON, as a receipt's
// args_sha256.
func ArgumentsSHA256(arguments any) (string, error) {
	canonical, err := CanonicalJSON(arguments)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

func checkApproval(claims *ReceiptClaims, check ReceiptCheck) error {
	action := check.Action
	var entries []ReceiptApproval
	if action == "" {
		switch len(claims.Approvals) {
		case 0:
			return &ReceiptError{ReceiptActionNotInReceipt, "the receipt holds no approval to match arguments to"}
		case 1:
			entries = claims.Approvals
			action = entries[0].Action
		default:
			names := make([]string, len(claims.Approvals))
			for i, a := range claims.Approvals {
				names[i] = a.Action
			}
			return &ReceiptError{ReceiptActionNeeded, fmt.Sprintf("the receipt holds %d approvals (%s); name the action the arguments are for", len(names), strings.Join(names, ", "))}
		}
	} else {
		held := []string{}
		for _, a := range claims.Approvals {
			held = append(held, strconv.Quote(a.Action))
			if a.Action == action {
				entries = append(entries, a)
			}
		}
		if len(entries) == 0 {
			if len(held) == 0 {
				held = []string{"none"}
			}
			return &ReceiptError{ReceiptActionNotInReceipt, fmt.Sprintf("action %q is not in the receipt (its approvals: %s)", action, strings.Join(held, ", "))}
		}
	}
	if claims.Status != StatusAnswered {
		return &ReceiptError{ReceiptNotApproved, fmt.Sprintf("action %q was not approved: the request was %s, not answered", action, claims.Status)}
	}
	var approved []ReceiptApproval
	decisions := map[string]bool{}
	for _, a := range entries {
		decisions[a.Decision] = true
		if a.Decision == DecisionApprove {
			approved = append(approved, a)
		}
	}
	if len(approved) == 0 {
		names := make([]string, 0, len(decisions))
		for d := range decisions {
			names = append(names, d)
		}
		sort.Strings(names)
		return &ReceiptError{ReceiptNotApproved, fmt.Sprintf("action %q was not approved: the decision was %s", action, strings.Join(names, ", "))}
	}
	if check.Arguments == nil {
		return nil
	}
	digest, err := ArgumentsSHA256(check.Arguments)
	if err != nil {
		return err
	}
	for _, a := range approved {
		if a.ArgsSHA256 == digest {
			return nil
		}
	}
	return &ReceiptError{ReceiptArgumentsDiffer, fmt.Sprintf("the arguments differ from those approved for %q (sha256 %.12s…, approved %.12s…)", action, digest, approved[0].ArgsSHA256)}
}

func malformed(why string) *ReceiptError {
	return &ReceiptError{ReceiptMalformed, "malformed receipt: " + why}
}

func b64url(text, what string) ([]byte, error) {
	decoded, err := base64.RawURLEncoding.Strict().DecodeString(text)
	if err != nil {
		return nil, malformed(fmt.Sprintf("its %s is not base64url", what))
	}
	return decoded, nil
}

func publicKey(jwks []byte, kid string) (ed25519.PublicKey, error) {
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(jwks, &set); err != nil || set.Keys == nil {
		return nil, &ReceiptError{ReceiptInvalidJWKS, `the JWKS is not {"keys": [...]} (the server's /.well-known/jwks.json)`}
	}
	for _, key := range set.Keys {
		if id, _ := key["kid"].(string); id != kid {
			continue
		}
		kty, _ := key["kty"].(string)
		crv, _ := key["crv"].(string)
		x, ok := key["x"].(string)
		if kty != "OKP" || crv != "Ed25519" || !ok {
			return nil, &ReceiptError{ReceiptUnknownKid, fmt.Sprintf("the JWKS key %q is not an Ed25519 (OKP) key", kid)}
		}
		raw, err := base64.RawURLEncoding.Strict().DecodeString(x)
		if err != nil || len(raw) != ed25519.PublicKeySize {
			return nil, &ReceiptError{ReceiptInvalidJWKS, fmt.Sprintf("the JWKS key %q has an `x` that is not 32 base64url bytes", kid)}
		}
		return ed25519.PublicKey(raw), nil
	}
	return nil, &ReceiptError{ReceiptUnknownKid, fmt.Sprintf("unknown kid %q: no key of the JWKS has it (is this the JWKS of the server that signed the receipt?)", kid)}
}

func readClaims(payload []byte) (*ReceiptClaims, error) {
	var object map[string]json.RawMessage
	if json.Unmarshal(payload, &object) != nil || object == nil {
		return nil, malformed("its payload is not a JSON object")
	}
	claims := &ReceiptClaims{}
	for _, field := range []struct {
		name string
		into any
		kind string
	}{
		{"iss", &claims.Iss, "a string"}, {"sub", &claims.Sub, "a string"}, {"tid", &claims.Tid, "a string"},
		{"iat", &claims.Iat, "an integer"}, {"jti", &claims.Jti, "a string"}, {"status", &claims.Status, "a string"},
		{"by", &claims.By, "a string"}, {"seq", &claims.Seq, "an integer"},
	} {
		value, ok := object[field.name]
		if !ok || json.Unmarshal(value, field.into) != nil || string(value) == "null" {
			return nil, malformed(fmt.Sprintf("its claim `%s` is not %s", field.name, field.kind))
		}
	}
	if value, ok := object["approvals"]; ok {
		var entries []map[string]any
		if json.Unmarshal(value, &entries) != nil {
			return nil, malformed("its claim `approvals` is not a list of objects")
		}
		for _, entry := range entries {
			id, ok1 := entry["id"].(string)
			action, ok2 := entry["action"].(string)
			decision, ok3 := entry["decision"].(string)
			sum, ok4 := entry["args_sha256"].(string)
			if !ok1 || !ok2 || !ok3 || !ok4 {
				return nil, malformed("an approval lacks `id`, `action`, `decision` or `args_sha256`")
			}
			claims.Approvals = append(claims.Approvals, ReceiptApproval{ID: id, Action: action, Decision: decision, ArgsSHA256: sum})
		}
	}
	return claims, nil
}

func writeCanonical(out *bytes.Buffer, v any) error {
	switch value := v.(type) {
	case nil:
		out.WriteString("null")
	case bool:
		out.WriteString(strconv.FormatBool(value))
	case json.Number:
		number, err := canonicalNumber(value)
		if err != nil {
			return err
		}
		out.WriteString(number)
	case string:
		return canonicalString(out, value)
	case []any:
		out.WriteByte('[')
		for i, item := range value {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := writeCanonical(out, item); err != nil {
				return err
			}
		}
		out.WriteByte(']')
	case map[string]any:
		names := make([]string, 0, len(value))
		for name := range value {
			names = append(names, name)
		}
		sort.Slice(names, func(i, j int) bool { return lessUTF16(names[i], names[j]) })
		out.WriteByte('{')
		for i, name := range names {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := canonicalString(out, name); err != nil {
				return err
			}
			out.WriteByte(':')
			if err := writeCanonical(out, value[name]); err != nil {
				return err
			}
		}
		out.WriteByte('}')
	default:
		return fmt.Errorf("clarify: canonical JSON has no form for %T", v)
	}
	return nil
}

// lessUTF16 orders as RFC 8785 asks: by UTF-16 code units, where a character above U+FFFF (a
// surrogate pair, D800-DFFF) sorts before U+E000-U+FFFF, unlike in UTF-8's byte order.
func lessUTF16(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

// canonicalString escapes only what RFC 8785 escapes: the quote, the backslash and the control
// characters (\b \t \n \f \r by name, the rest as \u00xx); everything else is written as UTF-8.
func canonicalString(out *bytes.Buffer, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("clarify: canonical JSON has no form for a string that is not UTF-8")
	}
	out.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			out.WriteString(`\"`)
		case '\\':
			out.WriteString(`\\`)
		case '\b':
			out.WriteString(`\b`)
		case '\t':
			out.WriteString(`\t`)
		case '\n':
			out.WriteString(`\n`)
		case '\f':
			out.WriteString(`\f`)
		case '\r':
			out.WriteString(`\r`)
		default:
			if r < 0x20 {
				fmt.Fprintf(out, `\u%04x`, r)
			} else {
				out.WriteRune(r)
			}
		}
	}
	out.WriteByte('"')
	return nil
}

// canonicalNumber writes a number as ECMAScript's Number.prototype.toString does (RFC 8785
// section 3.2.2.3): the shortest digits that read back as the same double, in plain notation
// for exponents from -7 to 20 and as d.ddde±x outside them.
func canonicalNumber(n json.Number) (string, error) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("clarify: canonical JSON has no form for the number %s", n)
	}
	if f == 0 {
		return "0", nil // -0 too
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest round-trip digits and the exponent, as in "1.2345e+06".
	mantissa, exponent, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
	digits := strings.Replace(mantissa, ".", "", 1)
	e, _ := strconv.Atoi(exponent)
	k, point := len(digits), e+1 // point: where the decimal point falls after the first digit
	var text string
	switch {
	case k <= point && point <= 21:
		text = digits + strings.Repeat("0", point-k)
	case 0 < point && point <= 21:
		text = digits[:point] + "." + digits[point:]
	case -6 < point && point <= 0:
		text = "0." + strings.Repeat("0", -point) + digits
	default:
		text = digits[:1]
		if k > 1 {
			text += "." + digits[1:]
		}
		if e >= 0 {
			text += "e+" + strconv.Itoa(e)
		} else {
			text += "e-" + strconv.Itoa(-e)
		}
	}
	return sign + text, nil
}
