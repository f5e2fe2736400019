package scrub

import (
	"strings"
	"testing"
)

// Fake credentials in the real formats. None of them is live.
const (
	openAIKey    = "sk-proj-Xk2v9QaT7LmN4pR8sW1zYb6cDe3fGh5jKq0uVx"
	openAILegacy = "sk-4f9KxT2mQ8vL1pR7sW3zYb6cDe0fGh5jKq9uVxA2bC4dE6fG"
	anthropicKey = "sk-ant-api03-Zx9Kq2Lm4Np6Rs8Tu0Vw1Xy3Za5Bc7De9Fg-AbCdEfGh12_ijklMNOP"
	githubPAT    = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"
	githubFine   = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789ab"
	slackBot     = "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	awsKeyID     = "AKIAIOSFODNN7EXAMPLE"
	awsSecret    = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	googleKey    = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
	jwtToken     = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	stripeLive   = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
	npmToken     = "npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
	rsaBody      = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK"
	rsaBlock     = "-----BEGIN RSA PRIVATE KEY-----\n" + rsaBody + "\n-----END RSA PRIVATE KEY-----"
)

func TestScrubRedacts(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		want   string   // exact output, when given
		absent []string // must not survive
	}{
		{name: "openai project key", in: "key is " + openAIKey + ".", want: "key is [REDACTED]."},
		{name: "openai legacy key", in: openAILegacy, want: Redacted},
		{name: "anthropic key", in: `client = Anthropic(api_key="` + anthropicKey + `")`, absent: []string{anthropicKey}},
		{name: "github classic", in: "remote: https://" + githubPAT + "@github.com/o/r.git", want: "remote: https://[REDACTED]@github.com/o/r.git"},
		{name: "github oauth", in: "gho_16C7e42F292c6912E7710c838347Ae178B4a", want: Redacted},
		{name: "github fine-grained", in: "GH=" + githubFine, absent: []string{githubFine}},
		{name: "slack bot token", in: "token " + slackBot + " ok", want: "token [REDACTED] ok"},
		{name: "slack webhook", in: "POST https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
			want: "POST https://hooks.slack.com/services/[REDACTED]"},
		{name: "aws key id", in: "id=" + awsKeyID + "\n", want: "id=[REDACTED]\n"},
		{name: "aws temporary key id", in: "ASIAY34FZKBOKMUTVV7A", want: Redacted},
		{name: "aws secret in credentials file", in: "[default]\naws_secret_access_key = " + awsSecret + "\n",
			want: "[default]\naws_secret_access_key = [REDACTED]\n"},
		{name: "google api key", in: "https://maps.googleapis.com/api?key=" + googleKey, absent: []string{googleKey}},
		{name: "jwt", in: "id_token: " + jwtToken, want: "id_token: [REDACTED]"},
		{name: "jwt bare in text", in: "got " + jwtToken + " back", want: "got [REDACTED] back"},
		{name: "unsigned jwt", in: "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.", want: Redacted},
		{name: "pem rsa", in: rsaBlock, want: "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n-----END RSA PRIVATE KEY-----"},
		{name: "pem ec crlf", in: "-----BEGIN EC PRIVATE KEY-----\r\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oXNXCtbKEVSsoAoGCCqGSM49\r\n-----END EC PRIVATE KEY-----\r\n",
			want: "-----BEGIN EC PRIVATE KEY-----\r\n[REDACTED]\r\n-----END EC PRIVATE KEY-----\r\n"},
		{name: "pem pkcs8", in: "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----", absent: []string{"MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"}},
		{name: "pem encrypted", in: "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI\n-----END ENCRYPTED PRIVATE KEY-----", absent: []string{"MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI"}},
		{name: "openssh key", in: "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----", absent: []string{"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"}},
		{name: "truncated pem", in: "cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n" + rsaBody + "\n...output truncated",
			want: "cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]"},
		{name: "pem escaped in json", in: `{"private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"}`, absent: []string{"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"}},
		{name: "stripe live", in: "STRIPE_SK=" + stripeLive, want: "STRIPE_SK=[REDACTED]"},
		{name: "stripe restricted", in: "rk_live_51H8abcDEFghiJKLmnoPQR", want: Redacted},
		{name: "npm token", in: "//registry.npmjs.org/:_authToken=" + npmToken, want: "//registry.npmjs.org/:_authToken=[REDACTED]"},
		{name: "bearer header", in: "Authorization: Bearer abcdef1234567890XYZ", want: "Authorization: Bearer [REDACTED]"},
		{name: "bearer in curl", in: `curl -H "Authorization: Bearer abc.def-123" https://api.example.com`, want: `curl -H "Authorization: Bearer [REDACTED]" https://api.example.com`},
		{name: "bearer lower case", in: "bearer 9f8e7d6c5b4a39281706", want: "bearer [REDACTED]"},
		{name: "basic auth header", in: "Authorization: Basic dXNlcjpwYXNzd29yZA==", want: "Authorization: Basic [REDACTED]"},
		{name: "cookie header", in: "Cookie: session=8f14e45fceea167a5a36dedd4bea2543; theme=dark", want: "Cookie: [REDACTED]"},
		{name: "env password", in: "DB_PASSWORD=hunter2hunter2", want: "DB_PASSWORD=[REDACTED]"},
		{name: "env pass", in: "DB_PASS=hunter2hunter2\nDB_USER=app", want: "DB_PASS=[REDACTED]\nDB_USER=app"},
		{name: "env value with spaces", in: "export ADMIN_PASSWORD=correct horse battery 9\n", want: "export ADMIN_PASSWORD=[REDACTED]\n"},
		{name: "env line in read output", in: "  12\tADMIN_PASSWORD=correct horse battery 9\n", want: "  12\tADMIN_PASSWORD=[REDACTED]\n"},
		{name: "env line in grep output", in: "config/.env:3: export DB_PASSWORD=correct horse 9\nconfig/.env-4- DB_TOKEN=a b c 1", want: "config/.env:3: export DB_PASSWORD=[REDACTED]\nconfig/.env-4- DB_TOKEN=[REDACTED]"},
		{name: "env secret key", in: "SECRET_KEY=django-insecure-abc123", want: "SECRET_KEY=[REDACTED]"},
		{name: "rails secret key base", in: "SECRET_KEY_BASE=9a8b7c6d5e4f", want: "SECRET_KEY_BASE=[REDACTED]"},
		{name: "credential env", in: "AZURE_CREDENTIAL=xyz789abc", want: "AZURE_CREDENTIAL=[REDACTED]"},
		{name: "passwd colon", in: "passwd: letmein99", want: "passwd: [REDACTED]"},
		{name: "single KEY", in: "KEY=0123456789abcdef", want: "KEY=[REDACTED]"},
		{name: "yaml api key", in: "openai:\n  api_key: abc123def456\n", want: "openai:\n  api_key: [REDACTED]\n"},
		{name: "json password", in: `{"user":"bob","password":"s3cr3t!"}`, want: `{"user":"bob","password":"[REDACTED]"}`},
		{name: "json escaped quote", in: `{"password": "a\"b9c"}`, want: `{"password": "[REDACTED]"}`},
		{name: "python dict env", in: `environ({'HOME': '/root', 'DB_PASSWORD': 'hunter2hunter2'})`, want: `environ({'HOME': '/root', 'DB_PASSWORD': '[REDACTED]'})`},
		{name: "camel case", in: `const clientSecret = "Zq8#kP2$vL"`, want: `const clientSecret = "[REDACTED]"`},
		{name: "go string literal", in: `token := "tk_9f8e7d6c"`, want: `token := "[REDACTED]"`},
		{name: "header x-api-key", in: "X-Api-Key: 5f4dcc3b5aa765d61d8327deb882cf99", want: "X-Api-Key: [REDACTED]"},
		{name: "query token", in: "GET /cb?access_token=ya29.a0AfH6SMB&state=xyz", want: "GET /cb?access_token=[REDACTED]&state=xyz"},
		{name: "flag", in: "mysql --password=Tr0ub4dor -h db", want: "mysql --password=[REDACTED] -h db"},
		{name: "connection string fields", in: "Server=db;User Id=sa;Password=Passw0rd!;Encrypt=true", want: "Server=db;User Id=sa;Password=[REDACTED];Encrypt=true"},
		{name: "dsn", in: "DSN=app:s3cret@tcp(db:3306)/app", want: "DSN=[REDACTED]"},
		{name: "postgres url", in: "postgres://admin:Pa55w0rd@db:5432/app", want: "postgres://admin:[REDACTED]@db:5432/app"},
		{name: "postgresql url in quotes", in: `DATABASE_URL="postgresql://u:p4ss@h/db?sslmode=off"`, want: `DATABASE_URL="postgresql://u:[REDACTED]@h/db?sslmode=off"`},
		{name: "mysql url", in: "mysql://root:toor1234@127.0.0.1:3306/x", want: "mysql://root:[REDACTED]@127.0.0.1:3306/x"},
		{name: "mongodb srv", in: "mongodb+srv://user:p%40ss@cluster0.mongodb.net/db", want: "mongodb+srv://user:[REDACTED]@cluster0.mongodb.net/db"},
		{name: "redis no user", in: "redis://:r3disPass@cache:6379/0", want: "redis://:[REDACTED]@cache:6379/0"},
		{name: "amqp", in: "amqp://guest:guest123@rabbit:5672/", want: "amqp://guest:[REDACTED]@rabbit:5672/"},
		{name: "password with at sign", in: "postgres://u:p@ss@h/db", want: "postgres://u:[REDACTED]@h/db"},
		{name: "hugging face", in: "HF=hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", absent: []string{"hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"}},
		{name: "gitlab", in: "glpat-xxxxXXXX1234yyyyZZZZ", want: Redacted},
		{name: "several in one line", in: awsKeyID + " " + githubPAT + " " + stripeLive, want: "[REDACTED] [REDACTED] [REDACTED]"},
		{name: "nofilter comment changes nothing", in: "echo $TOKEN # nofilter\n" + openAIKey, want: "echo $TOKEN # nofilter\n[REDACTED]"},
	}
	s := New()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := s.Scrub(c.in)
			if c.want != "" && got != c.want {
				t.Fatalf("Scrub(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
			for _, a := range c.absent {
				if strings.Contains(got, a) {
					t.Fatalf("Scrub(%q) = %q still contains %q", c.in, got, a)
				}
			}
			if !strings.Contains(got, Redacted) {
				t.Fatalf("Scrub(%q) = %q has no redaction", c.in, got)
			}
			if again := s.Scrub(got); again != got {
				t.Fatalf("scrubbing twice changed the text:\n%q\n%q", got, again)
			}
		})
	}
}

func TestNilAndZeroScrubberApplyPatterns(t *testing.T) {
	var nilScrubber *Scrubber
	var zero Scrubber
	for _, s := range []*Scrubber{nilScrubber, &zero} {
		if got := s.Scrub("k=" + githubPAT); got != "k="+Redacted {
			t.Fatalf("got %q", got)
		}
	}
}
