import { describe, expect, it } from "vitest";
import { markdownToHtml, notesLinkRel } from "../../src/domain/releases/release-notes-markdown.js";

/** Every tag markdown-it may emit for release notes, with the attributes each may carry. */
const allowedTags: Record<string, string[]> = {
  a: ["href", "title", "rel"],
  p: [],
  h1: [],
  h2: [],
  h3: [],
  h4: [],
  h5: [],
  h6: [],
  ul: [],
  ol: ["start"],
  li: [],
  strong: [],
  em: [],
  s: [],
  code: ["class"],
  pre: [],
  blockquote: [],
  hr: [],
  br: [],
  table: [],
  thead: [],
  tbody: [],
  tr: [],
  th: ["class"],
  td: ["class"],
};

interface Tag {
  name: string;
  attributes: Array<[string, string]>;
}

/**
 * The tags of an HTML fragment. Anything that starts like a tag but does not parse as a plain one
 * (name, double-quoted attributes) fails the test: a browser might read it as markup.
 */
function tagsOf(fragment: string): Tag[] {
  const tags: Tag[] = [];
  const tagStart = /<(?=[A-Za-z/!?])/g;
  const plainTag = /^<\/?([a-z][a-z0-9]*)((?:\s+[a-z-]+="[^"<>]*")*)\s*\/?>/;
  for (const match of fragment.matchAll(tagStart)) {
    const parsed = plainTag.exec(fragment.slice(match.index));
    if (!parsed)
      throw new Error(`not a plain tag at ${fragment.slice(match.index, match.index + 40)}`);
    const attributes = [...(parsed[2] ?? "").matchAll(/([a-z-]+)="([^"]*)"/g)].map(
      (a): [string, string] => [a[1] ?? "", a[2] ?? ""],
    );
    tags.push({ name: parsed[1] ?? "", attributes });
  }
  return tags;
}

function expectInert(markdown: string): Tag[] {
  const out = markdownToHtml(markdown);
  const tags = tagsOf(out);
  for (const tag of tags) {
    expect(Object.keys(allowedTags), out).toContain(tag.name);
    for (const [name, value] of tag.attributes) {
      expect(allowedTags[tag.name], `${tag.name} ${name} in ${out}`).toContain(name);
      if (name === "href") expect(value).toMatch(/^(https?:\/\/|mailto:)/);
    }
    if (tag.name === "a" && tag.attributes.length > 0) {
      expect(tag.attributes).toContainEqual(["rel", notesLinkRel]);
    }
  }
  return tags;
}

describe("release notes as Markdown", () => {
  it("renders headings, lists, emphasis, code, tables and links", () => {
    const out = markdownToHtml(
      '## New\n- Sync\n- **Fast** and _calm_ `code`\n\n| a | b |\n|:-:|--:|\n| 1 | 2 |\n\n[Changelog](https://example.com/changes "All")',
    );
    expect(out).toContain("<h2>New</h2>");
    expect(out).toContain("<li><strong>Fast</strong> and <em>calm</em> <code>code</code></li>");
    expect(out).toContain('<th class="align-center">a</th>');
    expect(out).toContain('<td class="align-right">2</td>');
    expect(out).toContain(
      `<a href="https://example.com/changes" title="All" rel="${notesLinkRel}">Changelog</a>`,
    );
    expect(out).not.toContain("style=");
  });

  it("links bare http(s) URLs and e-mail addresses, not file names or bare domains", () => {
    const out = markdownToHtml(
      "See https://example.com/a?b=1, mail help@example.com; download app-1.4.0-mac.zip or www.example.com",
    );
    expect(out).toContain(
      `<a href="https://example.com/a?b=1" rel="${notesLinkRel}">https://example.com/a?b=1</a>`,
    );
    expect(out).toContain(`<a href="mailto:help@example.com" rel="${notesLinkRel}">`);
    expect(out).toContain("app-1.4.0-mac.zip or www.example.com");
    expect(tagsOf(out).filter((t) => t.name === "a" && t.attributes.length > 0)).toHaveLength(2);
  });

  it.each([
    ["a script element", "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"],
    ["an img with onerror", '<img src=x onerror="alert(1)">', "&lt;img src=x onerror=&quot;"],
    ["an inline handler", "<div onclick=alert(1)>hi</div>", "&lt;div onclick=alert(1)&gt;"],
    ["an svg", "<svg onload=alert(1)>", "&lt;svg onload=alert(1)&gt;"],
    ["an iframe", '<iframe src="/admin/logout"></iframe>', "&lt;iframe"],
    ["a style element", "<style>body{display:none}</style>", "&lt;style&gt;"],
    ["an HTML comment", "<!-- x --> <?php x ?>", "&lt;!-- x --&gt;"],
    ["a raw anchor", '<a href="javascript:alert(1)">x</a>', "&lt;a href=&quot;javascript"],
  ])("raw HTML is escaped: %s", (_label, markdown, escaped) => {
    expect(markdownToHtml(markdown)).toContain(escaped);
    expect(expectInert(markdown).map((t) => t.name)).toEqual(["p", "p"]);
  });

  it.each([
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](&#106;avascript:alert(1))",
    "[x](java%0ascript:alert(1))",
    "[x]( javascript:alert(1) )",
    "<javascript:alert(1)>",
    "[x](vbscript:msgbox(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](data:image/png;base64,iVBORw0KGgo=)",
    "[x](file:///etc/passwd)",
    "[x](/admin/logout)",
    "[x](//evil.example/)",
    "[x][r]\n\n[r]: javascript:alert(1)",
    "![x](https://evil.example/pixel.png)",
    '![x](x "y" onerror=alert(1))',
  ])("no executable or off-site-by-default link: %s", (markdown) => {
    const tags = expectInert(markdown);
    expect(tags.some((t) => t.name === "img")).toBe(false);
    const hrefs = tags.flatMap((t) => t.attributes.filter(([n]) => n === "href"));
    for (const [, href] of hrefs) expect(href).toMatch(/^https:\/\/evil\.example\//);
  });

  it("a fenced block's info string cannot break out of its class attribute", () => {
    const tags = expectInert('```" onmouseover="alert(1)\n<b>x</b>\n```');
    const code = tags.find((t) => t.name === "code");
    expect(code?.attributes.map(([n]) => n)).toEqual(["class"]);
  });
});
