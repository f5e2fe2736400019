package adversarial_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// The scrubber is what tool factories receive as BuildContext.Secrets.
var _ tools.SecretRegistrar = (*scrub.Scrubber)(nil)

// Fake credentials in real formats; none is live.
const (
	advOpenAI    = "sk-proj-T3stOnlyAbCdEfGh1234567890IjKlMnOpQr"
	advAnthropic = "sk-ant-api03-F4keF4keF4ke_0123456789-abcdefghijKLMNOPQRstuvwx"
	advGitHub    = "ghp_F4kE0123456789abcdefghijABCDEFGHIJkl"
	advGitHubFG  = "github_pat_11AAAAAAA0abcdefghijkl_MNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	advSlack     = "xoxb-2222222222-3333333333333-F4keTokenValue0123456"
	advAWSID     = "AKIAZZZZZZZZ7EXAMPLE"
	advAWSSecret = "Zk9+F4keS3cretAccessKeyValue/0123456789Ab"
	advGoogle    = "AIzaSyF4ke-0123456789abcdefghijklmnopqr"
	advJWT       = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImYxIn0.eyJzdWIiOiJhZG1pbiIsImV4cCI6OTk5OTk5OTk5OX0.c2lnbmF0dXJlLXZhbHVlLWhlcmU"
	advStripe    = "sk_live_51F4keStripeKey0123456789abcdef"
	advNpm       = "npm_F4keNpmToken0123456789abcdefghijklmn"
	advPEMLine1  = "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi0F4keKeyMaterialLine1xx"
	advPEMLine2  = "qXJ0dGVkIGtleSBtYXRlcmlhbCBsaW5lIHR3bw0F4keKeyMaterialLine2yy"
	advSSHLine   = "b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABA"
	advPassword  = "hunter2hunter2"
)

// TestScrubHostileInputs tries to smuggle secrets past the scrubber in the
// shapes tool output really takes: env dumps, config files, URLs, JSON,
// HTTP traces, key files, and the file tools' own line prefixes.
func TestScrubHostileInputs(t *testing.T) {
	pem := "-----BEGIN RSA PRIVATE KEY-----\n" + advPEMLine1 + "\n" + advPEMLine2 + "\n-----END RSA PRIVATE KEY-----\n"
	cases := []struct {
		name    string
		in      string
		secrets []string
	}{
		{"openai key in prose", "Use the key " + advOpenAI + " for the request.", []string{advOpenAI}},
		{"anthropic key in code", `client = anthropic.Anthropic(api_key="` + advAnthropic + `")`, []string{advAnthropic}},
		{"github token in a git remote", "origin\thttps://x-access-token:" + advGitHub + "@github.com/o/r.git (fetch)", []string{advGitHub}},
		{"fine-grained github token in json", `{"auth":{"github":"` + advGitHubFG + `"}}`, []string{advGitHubFG}},
		{"slack token in yaml", "slack:\n  bot: " + advSlack + "\n", []string{advSlack}},
		{"slack webhook", "curl -X POST https://hooks.slack.com/services/T0F4KE000/B0F4KE000/F4keWebhookSecret012345 -d @msg.json",
			[]string{"F4keWebhookSecret012345"}},
		{"aws credentials file", "[default]\naws_access_key_id = " + advAWSID + "\naws_secret_access_key = " + advAWSSecret + "\n",
			[]string{advAWSID, advAWSSecret}},
		{"google key in a url", "GET https://maps.googleapis.com/maps/api/geocode/json?address=x&key=" + advGoogle, []string{advGoogle}},
		{"jwt in a curl trace", "> GET /v1/me HTTP/1.1\n> Host: api\n> Authorization: Bearer " + advJWT + "\n> Accept: */*\n", []string{advJWT}},
		{"jwt on its own", "session=" + advJWT, []string{advJWT}},
		{"pem split across lines", "$ cat id_rsa\n" + pem, []string{advPEMLine1, advPEMLine2}},
		{"openssh key", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + advSSHLine + "\n-----END OPENSSH PRIVATE KEY-----", []string{advSSHLine}},
		{"truncated pem", "-----BEGIN EC PRIVATE KEY-----\n" + advPEMLine1 + "\n" + advPEMLine2[:20] + "\n[output truncated at 4 KiB]", []string{advPEMLine1, advPEMLine2[:20]}},
		{"pem in a service-account json", `{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----\n` + advPEMLine1 + `\n-----END PRIVATE KEY-----\n"}`, []string{advPEMLine1}},
		{"pem in read output", "   1\t-----BEGIN RSA PRIVATE KEY-----\n   2\t" + advPEMLine1 + "\n   3\t" + advPEMLine2 + "\n   4\t-----END RSA PRIVATE KEY-----\n", []string{advPEMLine1, advPEMLine2}},
		{"stripe key in an env file", "STRIPE_SK=" + advStripe + "\n", []string{advStripe}},
		{"npm token in .npmrc", "//registry.npmjs.org/:_authToken=" + advNpm + "\nalways-auth=true\n", []string{advNpm}},
		{"DB_PASS", "DB_HOST=db\nDB_PASS=" + advPassword + "\n", []string{advPassword}},
		{"printenv dump", "HOME=/root\nPATH=/usr/bin\nOPENAI_API_KEY=" + advOpenAI + "\nGITHUB_TOKEN=" + advGitHub +
			"\nMYSQL_PWD=" + advPassword + "\nADMIN_PASSWORD=correct horse battery staple 42\n",
			[]string{advOpenAI, advGitHub, advPassword, "correct horse battery staple 42"}},
		{"python os.environ dump", "environ({'PATH': '/usr/bin', 'AWS_SECRET_ACCESS_KEY': '" + advAWSSecret + "', 'DB_PASSWORD': '" + advPassword + "'})",
			[]string{advAWSSecret, advPassword}},
		{"docker inspect env", `"Env": ["PATH=/usr/bin", "POSTGRES_PASSWORD=` + advPassword + `", "API_TOKEN=` + advPassword + `x"]`,
			[]string{advPassword}},
		{"kubernetes stringData", "stringData:\n  password: " + advPassword + "\n  api-key: 9f8e7d6c5b4a\n", []string{advPassword, "9f8e7d6c5b4a"}},
		{"connection strings", "postgres://app:" + advPassword + "@db:5432/app\nmongodb+srv://u:Mng0Pa55@c0.mongodb.net\nredis://:R3dis-Pa55@cache:6379\namqp://guest:Rbt-Pa55@mq",
			[]string{advPassword, "Mng0Pa55", "R3dis-Pa55", "Rbt-Pa55"}},
		{"password in a query string", "redirect to https://app/cb?user=bob&password=" + advPassword + "&next=/", []string{advPassword}},
		{"basic auth header", "Authorization: Basic YWRtaW46aHVudGVyMmh1bnRlcjI=", []string{"YWRtaW46aHVudGVyMmh1bnRlcjI="}},
		{"grep output of an env file", "deploy/.env:7: ADMIN_PASSWORD=correct horse battery staple 42", []string{"correct horse battery staple 42"}},
		{"json with escaped quotes", `{"client_secret": "ab\"cd` + advPassword + `"}`, []string{advPassword}},
		{"camelCase secret in js", `const config = { clientSecret: "` + advPassword + `" };`, []string{advPassword}},
		{"secret after non-ascii text", "密钥：" + advOpenAI + "。", []string{advOpenAI}},
		{"nofilter comment disables nothing", "$ env | grep KEY  # nofilter\n# raw\nOPENAI_API_KEY=" + advOpenAI + "\nsk " + advGitHub, []string{advOpenAI, advGitHub}},
	}
	s := scrub.New()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assertRedacted(t, s, c.in, c.secrets)
		})
	}
}

// TestScrubRegisteredSecrets covers values a tool registered at run time.
func TestScrubRegisteredSecrets(t *testing.T) {
	process := scrub.New()
	process.AddSecrets("operator-api-key-0123")
	run := process.Child()
	runSecret := "p3r-run/s3cret+value&x"
	run.AddSecrets(runSecret)
	other := process.Child()

	t.Run("inside other text", func(t *testing.T) {
		assertRedacted(t, run, "prefix"+runSecret+"suffix and operator-api-key-0123.", []string{runSecret, "operator-api-key-0123"})
	})
	t.Run("url-encoded in a url", func(t *testing.T) {
		assertRedacted(t, run, "GET /search?q="+url.QueryEscape(runSecret), []string{url.QueryEscape(runSecret)})
	})
	t.Run("json-escaped", func(t *testing.T) {
		assertRedacted(t, run, `{"v":"p3r-run\/s3cret+value\u0026x","w":"`+runSecret+`"}`, []string{runSecret})
	})
	// Every way a URL carries it: %20 or + for a space, upper- or
	// lower-case hex, a path segment, encodeURIComponent.
	spaced := "open sesame/2024+key&x=1 (prod)!"
	run.AddSecrets(spaced)
	for name, form := range map[string]string{
		"query escape":               url.QueryEscape(spaced),
		"percent-20":                 strings.ReplaceAll(url.QueryEscape(spaced), "+", "%20"),
		"path escape":                url.PathEscape(spaced),
		"lower-case hex":             strings.ToLower(url.QueryEscape(spaced)),
		"lower-case hex, percent-20": strings.ToLower(strings.ReplaceAll(url.QueryEscape(spaced), "+", "%20")),
		"encodeURIComponent":         "open%20sesame%2F2024%2Bkey%26x%3D1%20(prod)!",
		"encodeURIComponent, lower":  "open%20sesame%2f2024%2bkey%26x%3d1%20(prod)!",
	} {
		t.Run("url "+name, func(t *testing.T) {
			if form == spaced {
				t.Fatalf("%s: the form is the secret itself", name)
			}
			assertRedacted(t, run, "GET https://api.example.com/v1/"+form+"?k="+form+" HTTP/1.1", []string{form})
		})
	}
	t.Run("child value stays out of the parent's scope", func(t *testing.T) {
		text := "value " + runSecret
		if got := process.Scrub(text); got != text {
			t.Errorf("the parent redacts a child's value: %q", got)
		}
		if got := other.Scrub(text); got != text {
			t.Errorf("a sibling run redacts another run's value: %q", got)
		}
		assertRedacted(t, run, text, []string{runSecret})
	})
	t.Run("parent value added later reaches children", func(t *testing.T) {
		process.AddSecrets("late-operator-secret")
		assertRedacted(t, other, "x late-operator-secret y", []string{"late-operator-secret"})
	})
}

func assertRedacted(t *testing.T, s *scrub.Scrubber, in string, secrets []string) {
	t.Helper()
	got := s.Scrub(in)
	for _, secret := range secrets {
		if strings.Contains(got, secret) {
			t.Errorf("secret %q survived:\n%s", secret, got)
		}
	}
	if !strings.Contains(got, scrub.Redacted) {
		t.Errorf("no %s in:\n%s", scrub.Redacted, got)
	}
	if again := s.Scrub(got); again != got {
		t.Errorf("scrubbing the output again changed it:\n%s\n%s", got, again)
	}
}
