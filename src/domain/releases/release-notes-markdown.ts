import MarkdownIt from "markdown-it";

/** The only link targets release notes may have; anything else stays plain text. */
const allowedLink = /^(https?:\/\/|mailto:)/i;

/** The rel every link in release notes carries: notes are written by whoever can publish. */
export const notesLinkRel = "noopener noreferrer nofollow";

/**
 * Release notes as Markdown (CommonMark + GFM tables and strikethrough), rendered to HTML safe to
 * place in a dashboard page or a Sparkle appcast:
 * - raw HTML is escaped, never passed through (`html: false`);
 * - links only to http(s) and mailto (a `javascript:`, `data:` or relative link stays text), each
 *   with `rel="noopener noreferrer nofollow"`;
 * - bare URLs with a scheme become links, bare domains do not (file names such as `app.zip` are
 *   not links);
 * - no images (the CSP would block remote ones anyway) and no style attributes (table alignment
 *   becomes a class), so the page's CSP needs no exception.
 */
const md = new MarkdownIt({ html: false, linkify: true, typographer: false });
md.linkify.set({ fuzzyLink: false, fuzzyIP: false });
md.disable("image");
md.validateLink = (url) => allowedLink.test(url.trim());

md.renderer.rules.link_open = (tokens, idx, options, _env, self) => {
  tokens[idx]?.attrSet("rel", notesLinkRel);
  return self.renderToken(tokens, idx, options);
};

for (const rule of ["th_open", "td_open"] as const) {
  md.renderer.rules[rule] = (tokens, idx, options, _env, self) => {
    const token = tokens[idx];
    const align = /^text-align:(left|center|right)$/.exec(String(token?.attrGet("style") ?? ""));
    if (token) {
      token.attrs = (token.attrs ?? []).filter(([name]) => name !== "style");
      if (align) token.attrSet("class", `align-${align[1]}`);
    }
    return self.renderToken(tokens, idx, options);
  };
}

/**
 * Release notes rendered as sanitised HTML (see above). Its cost grows faster than the text on
 * some inputs (64 KiB of `![` takes about a second on a busy 2-core machine): the service runs it only through
 * renderReleaseNotes (release-notes.ts), on a thread of its own and with a deadline.
 */
export function markdownToHtml(markdown: string): string {
  return md.render(markdown);
}
