import { ShipkeyError } from "../../errors.js";
import { escapeHtml } from "../../lib/escape-html.js";
import { type EmailPlaceholder, emailPlaceholders } from "../../contracts/vocabulary.js";

/**
 * A message's template: a subject and a plain-text body with placeholders. `{{name}}` is the
 * value of a placeholder, `{{#name}}…{{/name}}` what is between only when the value is not
 * empty (a download link's line, say). The body gives the text part as written and the HTML part
 * escaped, paragraph by paragraph. Pure functions: rendering reads nothing and writes nothing.
 */
export interface EmailTemplate {
  subject: string;
  body: string;
}

export type EmailValues = Partial<Record<EmailPlaceholder, string>>;

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

type Token =
  | { type: "text"; text: string }
  | { type: "value"; name: EmailPlaceholder }
  | { type: "section"; name: EmailPlaceholder; inner: Token[] };

const known: ReadonlySet<string> = new Set(emailPlaceholders);
const tag = /\{\{([^{}]*)\}\}/g;
/** The placeholders whose values are links: an http(s) value is a link in the HTML part. */
const links: ReadonlySet<EmailPlaceholder> = new Set(["downloadUrl", "portalUrl"]);

const placeholderList = emailPlaceholders.map((name) => `{{${name}}}`).join(", ");

function invalid(field: string, message: string): ShipkeyError {
  return new ShipkeyError("EMAIL_TEMPLATE_INVALID", `${field}: ${message}`, { field });
}

/**
 * A template's text as tokens; an unknown placeholder, a tag that is not one, a stray `{{` or a
 * section left open or closed twice is refused (400 EMAIL_TEMPLATE_INVALID naming `field`).
 */
export function parseTemplate(text: string, field: string): Token[] {
  const root: Token[] = [];
  const open: Array<{ name: EmailPlaceholder; tokens: Token[] }> = [];
  const current = () => open[open.length - 1]?.tokens ?? root;
  const addText = (part: string) => {
    if (part === "") return;
    if (part.includes("{{") || part.includes("}}")) {
      throw invalid(field, "a {{ or }} that is not part of a placeholder");
    }
    current().push({ type: "text", text: part });
  };
  let last = 0;
  for (const match of text.matchAll(tag)) {
    addText(text.slice(last, match.index));
    last = match.index + match[0].length;
    const inner = (match[1] ?? "").trim();
    const parsed = /^([#/]?)\s*([A-Za-z][A-Za-z0-9]*)$/.exec(inner);
    const name = parsed?.[2] ?? inner;
    if (!parsed || !known.has(name)) {
      throw invalid(
        field,
        `unknown placeholder {{${inner}}}; the placeholders are ${placeholderList}`,
      );
    }
    const placeholder = name as EmailPlaceholder;
    if (parsed[1] === "#") {
      open.push({ name: placeholder, tokens: [] });
    } else if (parsed[1] === "/") {
      const section = open.pop();
      if (section?.name !== placeholder) {
        throw invalid(field, `{{/${name}}} closes no {{#${name}}}`);
      }
      current().push({ type: "section", name: placeholder, inner: section.tokens });
    } else {
      current().push({ type: "value", name: placeholder });
    }
  }
  addText(text.slice(last));
  const unclosed = open.pop();
  if (unclosed)
    throw invalid(field, `{{#${unclosed.name}}} is not closed by {{/${unclosed.name}}}`);
  return root;
}

/** Checks a template as its save does: both parts parse (templates.<kind>.subject/.body). */
export function assertValidTemplate(template: EmailTemplate, field: string): void {
  parseTemplate(template.subject, `${field}.subject`);
  parseTemplate(template.body, `${field}.body`);
}

function fill(tokens: Token[], values: EmailValues, value: (name: EmailPlaceholder) => string) {
  let out = "";
  for (const token of tokens) {
    if (token.type === "text") out += token.text;
    else if (token.type === "value") out += value(token.name);
    else if ((values[token.name] ?? "") !== "") out += fill(token.inner, values, value);
  }
  return out;
}

/** A value in the HTML part: escaped, on one line, a link when it is an http(s) link. */
function htmlValue(name: EmailPlaceholder, text: string): string {
  const escaped = escapeHtml(text.replace(/[\r\n]+/g, " "));
  if (links.has(name) && /^https?:\/\//i.test(text)) return `<a href="${escaped}">${escaped}</a>`;
  if (name === "licenseKey" && text !== "") return `<code>${escaped}</code>`;
  return escaped;
}

/** The HTML part: the body's text escaped, blank lines between paragraphs, line breaks kept. */
function htmlDocument(subject: string, tokens: Token[], values: EmailValues): string {
  const escapedText = (tokenList: Token[]): Token[] =>
    tokenList.map((token) =>
      token.type === "text"
        ? { type: "text", text: escapeHtml(token.text) }
        : token.type === "section"
          ? { ...token, inner: escapedText(token.inner) }
          : token,
    );
  const body = fill(escapedText(tokens), values, (name) => htmlValue(name, values[name] ?? ""));
  const paragraphs = body
    .replace(/\r\n?/g, "\n")
    .split(/\n[ \t]*\n+/)
    .map((paragraph) => paragraph.trim())
    .filter((paragraph) => paragraph !== "")
    .map((paragraph) => `<p>${paragraph.replace(/\n/g, "<br>\n")}</p>`);
  return (
    `<!doctype html>\n<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title>` +
    `</head>\n<body style="font-family: sans-serif; line-height: 1.5; color: #222">\n` +
    `${paragraphs.join("\n")}\n</body></html>\n`
  );
}

/** A template with its values: the subject on one line, the text part and the HTML part. */
export function renderEmail(template: EmailTemplate, values: EmailValues): RenderedEmail {
  const subjectTokens = parseTemplate(template.subject, "subject");
  const bodyTokens = parseTemplate(template.body, "body");
  const plain = (name: EmailPlaceholder) => values[name] ?? "";
  const subject = fill(subjectTokens, values, plain)
    .split(/[\r\n]+/)
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .join(" ");
  const text = `${fill(bodyTokens, values, plain).replace(/\r\n?/g, "\n").trim()}\n`;
  return { subject, text, html: htmlDocument(subject, bodyTokens, values) };
}
