import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, redactSmtpUrl } from "../../src/config.js";

const load = (env: Record<string, string>) => loadConfig(env);

describe("SMTP_URL and MAIL_FROM", () => {
  it("unset: no e-mail is sent (messages wait in the outbox)", () => {
    expect(load({})).toMatchObject({ smtpUrl: null, mailFrom: null });
  });

  it.each([
    "smtp://user:pass@smtp.example.com:587",
    "smtps://user:p%40ss@smtp.example.com:465",
    "smtp://127.0.0.1:2525?requireTLS=true",
  ])("takes %s with MAIL_FROM", (url) => {
    expect(load({ SMTP_URL: url, MAIL_FROM: "Acme <licenses@acme.example>" })).toMatchObject({
      smtpUrl: url,
      mailFrom: "Acme <licenses@acme.example>",
    });
  });

  it("refuses a URL that is not smtp(s) without quoting it (it may hold a password)", () => {
    for (const url of ["https://user:s3cret@smtp.example.com", "s3cret", "smtp://:s3cret@"]) {
      let error: unknown;
      try {
        load({ SMTP_URL: url, MAIL_FROM: "a@b.example" });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect(String(error)).toContain("SMTP_URL must be an smtp:// or smtps:// URL");
      expect(String(error)).not.toContain("s3cret");
    }
  });

  it("MAIL_FROM is required with SMTP_URL, and must be an address or Name <address>", () => {
    expect(() => load({ SMTP_URL: "smtp://smtp.example.com" })).toThrow(
      "MAIL_FROM must be set when SMTP_URL is",
    );
    for (const from of ["nobody", "Acme <nobody>", "a@b", "x@y.example\nBcc: z@example.com"]) {
      expect(() => load({ MAIL_FROM: from })).toThrow(ConfigError);
    }
    expect(load({ MAIL_FROM: "licenses@acme.example" }).mailFrom).toBe("licenses@acme.example");
  });

  it("a log shows the URL with its password as ***", () => {
    expect(redactSmtpUrl("smtps://user:s3cret@smtp.example.com:465")).toBe(
      "smtps://user:***@smtp.example.com:465",
    );
    expect(redactSmtpUrl("smtp://smtp.example.com")).toBe("smtp://smtp.example.com");
  });
});
