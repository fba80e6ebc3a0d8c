import { describe, expect, it } from "vitest";
import { defaultTemplates } from "../../src/domain/email/default-templates.js";
import {
  assertValidTemplate,
  parseTemplate,
  renderEmail,
} from "../../src/domain/email/templates.js";
import { ShipkeyError } from "../../src/errors.js";
import { emailKinds } from "../../src/contracts/vocabulary.js";

const values = {
  productName: "Desktop App",
  vendorName: "Acme",
  customerName: "Ada",
  licenseKey: "ABCDE-FGHIJ",
  maxMachines: "3",
  expiresAt: "2031-03-04",
  downloadUrl: "https://acme.example/download",
};

function refusal(text: string): ShipkeyError {
  try {
    parseTemplate(text, "templates.license_delivered.body");
  } catch (err) {
    if (err instanceof ShipkeyError) return err;
    throw err;
  }
  throw new Error(`${text} was accepted`);
}

describe("e-mail templates", () => {
  it("fills placeholders, with spaces inside the braces too", () => {
    expect(
      renderEmail({ subject: "Key for {{ productName }}", body: "{{licenseKey}}" }, values),
    ).toMatchObject({ subject: "Key for Desktop App", text: "ABCDE-FGHIJ\n" });
  });

  it("a section shows only when its value is not empty", () => {
    const template = { subject: "s", body: "a{{#portalUrl}} portal {{portalUrl}}{{/portalUrl}}b" };
    expect(renderEmail(template, values).text).toBe("ab\n");
    expect(renderEmail(template, { ...values, portalUrl: "https://p.example" }).text).toBe(
      "a portal https://p.exampleb\n",
    );
  });

  it("the HTML part escapes the text and every value, and links http(s) links", () => {
    const rendered = renderEmail(
      {
        subject: "<Hi> {{customerName}}",
        body: "Dear {{customerName}} & co\n\n{{downloadUrl}}\nline",
      },
      {
        ...values,
        customerName: '<script>alert("x")</script>',
        downloadUrl: "https://a.example/?x=1&y=<2>",
      },
    );
    expect(rendered.text).toContain('Dear <script>alert("x")</script> & co');
    expect(rendered.html).not.toContain("<script>");
    expect(rendered.html).toContain(
      "Dear &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co",
    );
    expect(rendered.html).toContain(
      '<p><a href="https://a.example/?x=1&amp;y=&lt;2&gt;">https://a.example/?x=1&amp;y=&lt;2&gt;</a><br>\nline</p>',
    );
    expect(rendered.html).toContain("<title>&lt;Hi&gt; &lt;script&gt;");
  });

  it("a link placeholder that is not http(s) is text, not a link", () => {
    const html = renderEmail(
      { subject: "s", body: "{{downloadUrl}}" },
      { downloadUrl: "javascript:alert(1)" },
    ).html;
    expect(html).not.toContain("<a ");
    expect(html).toContain("javascript:alert(1)");
  });

  it("the subject is one line, whatever a value holds", () => {
    expect(
      renderEmail({ subject: "{{customerName}}!", body: "b" }, { customerName: "a\r\nBcc: x" }),
    ).toMatchObject({ subject: "a Bcc: x!" });
  });

  it.each([
    ["{{licenceKey}}", "unknown placeholder {{licenceKey}}"],
    ["{{ license key }}", "unknown placeholder {{license key}}"],
    ["{{}}", "unknown placeholder {{}}"],
    ["{{licenseKey", "a {{ or }} that is not part of a placeholder"],
    ["licenseKey}}", "a {{ or }} that is not part of a placeholder"],
    ["{{#portalUrl}}open", "{{#portalUrl}} is not closed by {{/portalUrl}}"],
    ["close{{/portalUrl}}", "{{/portalUrl}} closes no {{#portalUrl}}"],
    ["{{#portalUrl}}{{/downloadUrl}}", "{{/downloadUrl}} closes no {{#downloadUrl}}"],
  ])("refuses %s (%s)", (text, message) => {
    const err = refusal(text);
    expect(err.code).toBe("EMAIL_TEMPLATE_INVALID");
    expect(err.statusCode).toBe(400);
    expect(err.message).toContain(message);
    expect(err.details.field).toBe("templates.license_delivered.body");
  });

  it.each(emailKinds)("the default %s template is valid and names product and vendor", (kind) => {
    const template = defaultTemplates[kind];
    expect(() => assertValidTemplate(template, kind)).not.toThrow();
    const rendered = renderEmail(template, values);
    expect(rendered.subject).toContain("Desktop App");
    expect(rendered.text).toContain("Acme");
    expect(rendered.text).toContain("ABCDE-FGHIJ");
    expect(rendered.html).toContain("<code>ABCDE-FGHIJ</code>");
    expect(rendered.text).not.toMatch(/\{\{|\}\}/);
  });

  it("license delivered: the key, how to activate, the download link; no empty lines left", () => {
    const { text } = renderEmail(defaultTemplates.license_delivered, values);
    expect(text).toContain("To activate it, open Desktop App");
    expect(text).toContain("Download Desktop App: https://acme.example/download");
    expect(text).not.toContain("Manage your license");
    expect(text).not.toMatch(/\n\n\n/);
  });
});
