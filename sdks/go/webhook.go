// Checking that a webhook delivery came from clarify.
//
// clarify signs each delivery with `Clarify-Signature: t=<unix seconds>,v1=<hex>`, where
// v1 = hex(HMAC-SHA256(secret, "<t>." + raw body)) and secret is the tenant's webhook secret
// (Client.WebhookSecret, `GET /v1/webhook-secret`). Deliveries are at least once: deduplicate on
// the Clarify-Delivery header.

package clarify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header names of a webhook delivery.
const (
	SignatureHeader = "Clarify-Signature"
	DeliveryHeader  = "Clarify-Delivery"
	EventHeader     = "Clarify-Event"
)

// WebhookTolerance is how far a signature's time may be from now: 5 minutes, against replays.
const WebhookTolerance = 5 * time.Minute

// CodeInvalidSignature is the Code of the *Error VerifyWebhook returns.
const CodeInvalidSignature = "invalid_signature"

// VerifyWebhook checks a delivery: header is its Clarify-Signature header, body the raw body
// exactly as received. It returns an *Error with CodeInvalidSignature when the header is
// missing or malformed, the signature's time is more than WebhookTolerance from now, or no v1
// signature matches (compared in constant time). Decode the body (an Outcome, or for
// `request.reminded`, `request.warned` and `request.escalated` a Record) only once it passes.
func VerifyWebhook(secret, header string, body []byte) error {
	return VerifyWebhookAt(secret, header, body, time.Now(), WebhookTolerance)
}

// VerifyWebhookAt is VerifyWebhook with the current time and the tolerance given.
func VerifyWebhookAt(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if strings.TrimSpace(header) == "" {
		return invalidSignature("the delivery has no Clarify-Signature header")
	}
	var t int64
	var haveTime bool
	var signatures []string
	for _, part := range strings.Split(header, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch name {
		case "t":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return invalidSignature(fmt.Sprintf("Clarify-Signature has a time that is not a number: %.40q", value))
			}
			t, haveTime = n, true
		case "v1":
			signatures = append(signatures, value)
		}
	}
	if !haveTime || len(signatures) == 0 {
		return invalidSignature("Clarify-Signature needs both t=<time> and v1=<signature>")
	}
	age := now.Sub(time.Unix(t, 0))
	if age > tolerance || age < -tolerance {
		when := fmt.Sprintf("%d s ago", int64(age/time.Second))
		if age < 0 {
			when = fmt.Sprintf("%d s in the future", int64(-age/time.Second))
		}
		return invalidSignature(fmt.Sprintf("the delivery was signed %s, outside the %d s tolerance; check the clocks, or refuse a replay", when, int64(tolerance/time.Second)))
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(t, 10) + "."))
	mac.Write(body)
	expected := []byte(hex.EncodeToString(mac.Sum(nil)))
	for _, s := range signatures {
		if hmac.Equal(expected, []byte(s)) {
			return nil
		}
	}
	return invalidSignature("the signature does not match; is the secret this tenant's webhook secret?")
}

func invalidSignature(message string) error {
	return &Error{Code: CodeInvalidSignature, Message: message}
}
