import { listAudit } from "../../src/domain/audit/audit-log.js";
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { createProduct } from "../../src/domain/products/products.js";
import { notesLinkRel } from "../../src/domain/releases/release-notes-markdown.js";
import { placeholderOrigin } from "../../src/http/dashboard/views/feeds.js";
import { adminAccess } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { type Channel } from "../../src/contracts/vocabulary.js";

const csp =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

const hostileNotes = [
  "## Fixed",
  "- <script>alert(1)</script>",
  '- <img src=x onerror="alert(1)">',
  "- [click](javascript:alert(1)) and <javascript:alert(1)>",
  '- <a href="javascript:alert(1)">raw anchor</a> <iframe src="/admin/logout"></iframe>',
  "- [ok](https://example.com/changes) ![pixel](https://evil.example/p.png)",
].join("\n");

function unescapeHtml(text: string): string {
  return text
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&");
}

/** The text of each copy-paste snippet on a page, by client id. */
function snippets(page: string): Record<string, string> {
  const found: Record<string, string> = {};
  for (const m of page.matchAll(
    /<section class="client-config" data-client="([a-z-]+)">[\s\S]*?<code id="([^"]+)">([\s\S]*?)<\/code>/g,
  )) {
    found[m[1] ?? ""] = unescapeHtml(m[3] ?? "");
    // The copy button names this block.
    expect(page).toContain(`data-copy="${m[2]}"`);
  }
  return found;
}

const versionsOn = (page: string) =>
  [...page.matchAll(/<section class="panel release" data-version="([^"]+)"/g)].map((m) => m[1]);

describe.each(dialects)("dashboard releases page (%s)", (dialect) => {
  let f: Fixture;
  let proxied: Fixture;
  let cookie: string;
  let csrf: string;
  let proxiedCookie: string;
  let products = 0;
  beforeAll(async () => {
    f = await createFixture(dialect);
    ({ cookie, csrf } = await adminAccess(f, "releases@example.com"));
    proxied = await createFixture(dialect, { trustProxy: ["10.0.0.1"] });
    ({ cookie: proxiedCookie } = await adminAccess(proxied, "proxied@example.com"));
  });
  afterAll(async () => {
    await f?.close();
    await proxied?.close();
  });

  const newProduct = async () => {
    products += 1;
    return (await createProduct(f.db, { slug: `page-app-${products}`, name: "Page & App" })).slug;
  };

  const publish = async (
    productSlug: string,
    version: string,
    channel: Channel = "STABLE",
    releaseNotes: string | null = null,
  ) => {
    const sha512 = createHash("sha512").update(version).digest("base64");
    const response = await f.post(
      "/api/releases/publish",
      {
        productSlug,
        version,
        channel,
        releaseNotes,
        releases: ["WINDOWS", "MACOS", "LINUX"].map((platform) => ({
          platform,
          arch: "ARM64",
          downloadUrl: `https://cdn.example.com/${version}/app-${platform}-arm64.zip`,
          signature: `sig-${version}`,
          sha512,
        })),
      },
      { authorization: `Bearer ${f.publishKey}` },
    );
    expect(response.statusCode, response.body).toBe(200);
  };

  const page = (slug: string, headers: Record<string, string> = {}) =>
    f.app.inject({
      method: "GET",
      url: `/admin/releases?product=${slug}`,
      headers: { cookie, host: "updates.example.com", ...headers },
    });

  it("shows each version's rollout and critical flag, and starts, pauses, resumes and completes it (audited)", async () => {
    const slug = await newProduct();
    await publish(slug, "1.0.0");
    await publish(slug, "1.1.0-beta.1", "BETA");
    const form = (action: string, fields: Record<string, string> = {}) =>
      f.app.inject({
        method: "POST",
        url: `/admin/releases/${slug}/1.1.0-beta.1/${action}`,
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
      });
    const panel = async () =>
      (await page(slug)).body.split('data-version="1.1.0-beta.1"')[1]?.split("</section>")[0] ?? "";
    expect(await panel()).toContain("Released to every machine");
    expect(await panel()).toContain("<code>1.1.0beta.1</code>");
    expect((await form("rollout", { percent: "10" })).statusCode).toBe(303);
    expect(await panel()).toContain("Rolling out to 10 %");
    expect((await form("rollout", { percent: "0" })).statusCode).toBe(400);
    expect((await form("rollout/pause")).statusCode).toBe(303);
    expect(await panel()).toContain("Paused at 10 %");
    expect((await form("rollout/resume")).statusCode).toBe(303);
    expect((await form("critical", { critical: "on" })).statusCode).toBe(303);
    expect(await panel()).toContain("badge-critical");
    expect((await form("rollout/complete")).statusCode).toBe(303);
    expect(await panel()).toContain("Released to every machine");
    const audit = await listAudit(f.db, { limit: 5 });
    expect(audit.items.map((e) => e.action)).toEqual([
      "release.rollout_complete",
      "release.critical",
      "release.rollout_resume",
      "release.rollout_pause",
      "release.rollout",
    ]);
  });

  it("marks under each file the feeds that offer it", async () => {
    const slug = await newProduct();
    await publish(slug, "1.0.0");
    const panel =
      (await page(slug)).body.split('data-version="1.0.0"')[1]?.split("</section>")[0] ?? "";
    const feeds = [...panel.matchAll(/<span class="muted feeds"\s*>([^<]*)</g)].map((m) =>
      m[1]?.trim(),
    );
    // WINDOWS, MACOS and LINUX arm64 .zip files, each with a signature and a sha512.
    expect(feeds).toEqual([
      "Tauri · electron-updater · Sparkle · generic",
      "Tauri · electron-updater · Sparkle · Squirrel.Mac · generic",
      "Tauri · electron-updater · generic",
    ]);
  });

  it("lists versions newest first by semver precedence, not by update time; a yanked one keeps its place and badge", async () => {
    const slug = await newProduct();
    for (const [version, channel] of [
      ["1.2.0", "STABLE"],
      ["1.10.0", "STABLE"],
      ["2.0.0-alpha.3", "ALPHA"],
      ["2.0.0-beta.10", "BETA"],
      ["2.0.0-beta.2", "BETA"],
      ["1.9.9", "STABLE"],
    ] as const) {
      await publish(slug, version, channel);
    }
    await publish(slug, "1.2.0"); // republished last: the most recently updated
    const yank = await f.app.inject({
      method: "POST",
      url: `/api/admin/products/${slug}/releases/1.10.0/yank`,
      headers: {
        authorization: `Bearer ${(await adminAccess(f, `yank-${slug}@example.com`)).apiKey}`,
      },
    });
    expect(yank.statusCode).toBe(200);

    const response = await page(slug);
    expect(response.statusCode).toBe(200);
    const expected = ["2.0.0-beta.10", "2.0.0-beta.2", "2.0.0-alpha.3", "1.10.0", "1.9.9", "1.2.0"];
    expect(versionsOn(response.body)).toEqual(expected);
    const yanked = response.body.split('data-version="1.10.0"')[1]?.split("</section>")[0] ?? "";
    expect(yanked).toContain('<span class="badge badge-yanked">yanked</span>');
    expect(yanked).toContain("Restore to feeds");

    const api = await f.app.inject({
      method: "GET",
      url: `/api/admin/products/${slug}/releases`,
      headers: { cookie },
    });
    expect(api.json().items.map((v: { version: string }) => v.version)).toEqual(expected);
  });

  it("renders hostile release notes as inert Markdown, under the unchanged CSP", async () => {
    const slug = await newProduct();
    await publish(slug, "1.0.0", "STABLE", hostileNotes);
    const response = await page(slug);
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-security-policy"]).toBe(csp);
    const body = response.body;
    const notes = /<div class="notes">([\s\S]*?)<\/div>/.exec(body)?.[1] ?? "";
    expect(notes).toContain("<h2>Fixed</h2>");
    expect(notes).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(notes).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(notes).toContain(`<a href="https://example.com/changes" rel="${notesLinkRel}">ok</a>`);
    // The page's one script element is the dashboard's own file; no element has a handler, no
    // link or source a script URL, no inline style.
    expect([...body.matchAll(/<script\b/gi)]).toHaveLength(1);
    expect(body).toContain('<script src="/admin/assets/app.js" defer></script>');
    expect(body).not.toMatch(/<[a-z][^>]*\son[a-z]+\s*=/i);
    expect(body).not.toMatch(
      /<[a-z][^>]*\s(href|src|action)\s*=\s*"?\s*(javascript|data|vbscript):/i,
    );
    expect(body).not.toMatch(/<(img|iframe|object|embed|svg|style)\b/i);
    expect(body).not.toMatch(/\sstyle\s*=/i);
    for (const anchor of notes.match(/<a [^>]*>/g) ?? []) expect(anchor).toContain(notesLinkRel);
  });

  it("shows each feed URL and a client configuration per updater, for the request's origin", async () => {
    const slug = await newProduct();
    const empty = await page(slug);
    expect(empty.body).toMatch(/<details class="panel feeds" id="feeds"\s+open>/);
    const base = `http://updates.example.com/api/updates/${slug}`;
    expect(empty.body).toContain(`${base}/tauri/{{target}}/{{arch}}/{{current_version}}`);
    for (const url of [
      `${base}/electron/latest.yml`,
      `${base}/electron/latest-mac.yml`,
      `${base}/electron/latest-linux.yml`,
      `${base}/electron/latest-linux-arm64.yml`,
      `${base}/sparkle/macos/arm64/appcast.xml`,
      `${base}/sparkle/macos/x64/appcast.xml`,
      `${base}/sparkle/windows/x64/appcast.xml`,
    ]) {
      expect(empty.body).toContain(url);
    }

    const configs = snippets(empty.body);
    expect(Object.keys(configs)).toEqual([
      "tauri",
      "electron-builder",
      "squirrel-mac",
      "sparkle",
      "winsparkle",
    ]);
    const tauri = JSON.parse(configs.tauri ?? "");
    expect(tauri.plugins.updater.endpoints).toEqual([
      `${base}/tauri/{{target}}/{{arch}}/{{current_version}}`,
    ]);
    expect(tauri.bundle.createUpdaterArtifacts).toBe(true);
    expect(parseYaml(configs["electron-builder"] ?? "")).toEqual({
      publish: { provider: "generic", url: `${base}/electron` },
    });
    expect(configs["squirrel-mac"]).toContain(
      "autoUpdater.setFeedURL({\n  url: `" +
        base +
        "/squirrel-mac/${process.arch}/${app.getVersion()}`,\n});",
    );
    expect(configs.sparkle).toBe(
      `<key>SUFeedURL</key>\n<string>${base}/sparkle/macos/arm64/appcast.xml</string>\n`,
    );
    expect(configs.winsparkle).toContain(
      `win_sparkle_set_appcast_url("${base}/sparkle/windows/x64/appcast.xml");`,
    );

    // Once something is published the section is collapsed, and every URL it shows answers.
    await publish(slug, "1.0.0");
    const published = await page(slug);
    expect(published.body).toMatch(/<details class="panel feeds" id="feeds"\s*>/);
    const path = (url: string) => url.replace("http://updates.example.com", "");
    const endpoint = (tauri.plugins.updater.endpoints[0] as string)
      .replace("{{target}}", "darwin")
      .replace("{{arch}}", "aarch64")
      .replace("{{current_version}}", "0.9.0");
    const squirrel = `${base}/squirrel-mac/arm64/0.9.0`;
    const electron = parseYaml(configs["electron-builder"] ?? "").publish.url as string;
    const sparkle = /<string>(.*)<\/string>/.exec(configs.sparkle ?? "")?.[1] ?? "";
    const winSparkle = /"(.*)"/.exec(configs.winsparkle ?? "")?.[1] ?? "";
    for (const url of [
      endpoint,
      squirrel,
      `${electron}/latest.yml`,
      `${electron}/latest-mac.yml`,
      `${electron}/latest-linux-arm64.yml`,
      sparkle,
      winSparkle.replace("/x64/", "/arm64/"),
      `${base}/latest?platform=LINUX&arch=ARM64&channel=stable&currentVersion=0.9.0`,
    ]) {
      const answer = await f.app.inject({ method: "GET", url: path(url) });
      expect(answer.statusCode, url).toBe(200);
    }
    expect((await f.app.inject({ method: "GET", url: path(endpoint) })).json().version).toBe(
      "1.0.0",
    );
  });

  it("takes X-Forwarded-Host and -Proto only from a trusted proxy, and never prints a hostile Host", async () => {
    const slug = await newProduct();
    const forwarded = {
      "x-forwarded-host": "shipkey.example.com",
      "x-forwarded-proto": "https",
    };
    const direct = await page(slug, forwarded);
    expect(direct.body).toContain(`http://updates.example.com/api/updates/${slug}/electron`);
    expect(direct.body).not.toContain("shipkey.example.com");

    await createProduct(proxied.db, { slug, name: "Proxied" });
    const viaProxy = await proxied.app.inject({
      method: "GET",
      url: `/admin/releases?product=${slug}`,
      remoteAddress: "10.0.0.1",
      headers: { cookie: proxiedCookie, host: "10.0.0.2:3000", ...forwarded },
    });
    expect(viaProxy.body).toContain(`https://shipkey.example.com/api/updates/${slug}/electron`);
    expect(viaProxy.body).not.toContain("10.0.0.2");

    for (const host of ['evil.example"><script>alert(1)</script>', "a b", "x@evil.example"]) {
      const hostile = await page(slug, { host });
      expect(hostile.statusCode).toBe(200);
      expect(hostile.body).not.toContain("evil.example");
      expect(hostile.body).toContain(
        `${placeholderOrigin.replace("<", "&lt;").replace(">", "&gt;")}/api/updates/${slug}/electron`,
      );
      expect(hostile.body).toContain('<p class="alert" role="alert">');
    }
  });
});
