import { arches, platforms } from "../../../contracts/vocabulary.js";
import { type Html, html } from "../html.js";

/** Shown instead of the origin when the request's host is not a plain host name. */
export const placeholderOrigin = "https://<your-shipkey-server>";

/** Every update feed of one product, as its clients address them (src/http/routes/updates/). */
export interface FeedUrls {
  tauri: string;
  squirrelMac: string;
  electron: string;
  sparkleMac: { x64: string; arm64: string };
  winSparkle: { x64: string; arm64: string };
  latest: string;
}

export function feedUrls(origin: string, slug: string): FeedUrls {
  const base = `${origin}/api/updates/${encodeURIComponent(slug)}`;
  const appcast = (platform: string, arch: string) =>
    `${base}/sparkle/${platform}/${arch}/appcast.xml`;
  return {
    tauri: `${base}/tauri/{{target}}/{{arch}}/{{current_version}}`,
    squirrelMac: `${base}/squirrel-mac/<x64|arm64>/<currentVersion>`,
    electron: `${base}/electron`,
    sparkleMac: { x64: appcast("macos", "x64"), arm64: appcast("macos", "arm64") },
    winSparkle: { x64: appcast("windows", "x64"), arm64: appcast("windows", "arm64") },
    latest: `${base}/latest?platform=<${platforms.join("|")}>&arch=<${arches.join("|")}>&channel=stable&currentVersion=<currentVersion>`,
  };
}

/** One copy-paste snippet: where it goes and what to paste. */
export interface ClientConfig {
  id: string;
  title: string;
  /** The file or call the snippet belongs in. */
  where: string;
  text: string;
  /** How channels work for this client. */
  channels: string;
  /** How this client sends its license, when the product requires one for updates. */
  license: string;
}

/** What the snippets need of a product. */
export interface FeedProduct {
  slug: string;
  name: string;
  tauriPublicKey: string | null;
  updatesRequireLicense: boolean;
}

const licenseHeaders = `{ Authorization: "License " + licenseKey, "Shipkey-Machine": machineId }`;

export function clientConfigs(origin: string, product: FeedProduct): ClientConfig[] {
  const { slug } = product;
  const urls = feedUrls(origin, slug);
  const squirrelBase = `${origin}/api/updates/${encodeURIComponent(slug)}/squirrel-mac`;
  return [
    {
      id: "tauri",
      title: "Tauri v2",
      where: "src-tauri/tauri.conf.json",
      text: JSON.stringify(
        {
          bundle: { createUpdaterArtifacts: true },
          plugins: {
            updater: {
              pubkey:
                product.tauriPublicKey ??
                "<contents of the public key from `tauri signer generate`>",
              endpoints: [urls.tauri],
            },
          },
        },
        null,
        2,
      ),
      channels: "Beta or alpha builds: append ?channel=beta (or alpha) to the endpoint.",
      license: `@tauri-apps/plugin-updater: check({ headers: ${licenseHeaders} }).`,
    },
    {
      id: "electron-builder",
      title: "electron-builder + electron-updater",
      where: "electron-builder.yml",
      text: `publish:\n  provider: generic\n  url: ${urls.electron}\n`,
      channels:
        'electron-updater reads latest.yml (Windows), latest-mac.yml and latest-linux.yml (latest-linux-arm64.yml on ARM64 Linux), which Shipkey builds from the published releases (entries with a sha512); set autoUpdater.channel = "beta" (or "alpha") to read beta*.yml.',
      license: `autoUpdater.requestHeaders = ${licenseHeaders}; (sent with the feed and the download).`,
    },
    {
      id: "squirrel-mac",
      title: "Electron autoUpdater (macOS, Squirrel.Mac)",
      where: "main process",
      text:
        `const { app, autoUpdater } = require("electron");\n\n` +
        `autoUpdater.setFeedURL({\n` +
        `  url: \`${squirrelBase}/\${process.arch}/\${app.getVersion()}\`,\n` +
        `});\n` +
        `autoUpdater.checkForUpdates();\n`,
      channels: "Append ?channel=beta (or alpha) to the URL. Only .zip entries are offered.",
      license: `autoUpdater.setFeedURL({ url, headers: ${licenseHeaders} }).`,
    },
    {
      id: "sparkle",
      title: "Sparkle 2 (macOS)",
      where: "Info.plist (the x64 build: …/macos/x64/appcast.xml)",
      text: `<key>SUFeedURL</key>\n<string>${urls.sparkleMac.arm64}</string>\n`,
      channels:
        "Append ?channel=beta (or alpha): those items carry sparkle:channel, so only users whose allowedChannels include it are offered them.",
      license:
        "Return the feed URL with ?licenseKey=…&machineId=… from the updater delegate's feedURLStringForUpdater: (download links carry them on).",
    },
    {
      id: "winsparkle",
      title: "WinSparkle (Windows)",
      where: "application start-up (the ARM64 build: …/windows/arm64/appcast.xml)",
      text: `win_sparkle_set_appcast_url("${urls.winSparkle.x64}");\n` + `win_sparkle_init();\n`,
      channels: "WinSparkle has no channels: the appcast without ?channel= lists stable releases.",
      license:
        'win_sparkle_set_http_header("Authorization", "License <key>"); win_sparkle_set_http_header("Shipkey-Machine", "<machine id>"); before win_sparkle_init().',
    },
  ];
}

function snippetId(slug: string, id: string): string {
  return `feed-config-${slug}-${id}`;
}

function feedList(urls: FeedUrls): Html {
  const rows: Array<[string, string[]]> = [
    ["Tauri v2", [urls.tauri]],
    ["Electron autoUpdater (Squirrel.Mac)", [urls.squirrelMac]],
    [
      "electron-updater",
      [
        `${urls.electron}/latest.yml`,
        `${urls.electron}/latest-mac.yml`,
        `${urls.electron}/latest-linux.yml`,
        `${urls.electron}/latest-linux-arm64.yml`,
      ],
    ],
    ["Sparkle 2 (macOS)", [urls.sparkleMac.x64, urls.sparkleMac.arm64]],
    ["WinSparkle (Windows)", [urls.winSparkle.x64, urls.winSparkle.arm64]],
    ["Any other client (JSON)", [urls.latest]],
  ];
  return html`<div class="table-wrap">
    <table class="feed-urls">
      <thead>
        <tr>
          <th>Client</th>
          <th>Feed URL</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          ([client, list]) =>
            html`<tr>
              <th scope="row">${client}</th>
              <td>${list.map((url) => html`<code class="url">${url}</code>`)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

/**
 * A product's feed URLs and a client configuration per updater, each with a copy button (the
 * dashboard script's `data-copy`; without JavaScript the text is selectable). Collapsed unless
 * `open`.
 */
export function feedsSection(origin: string | null, product: FeedProduct, open: boolean): Html {
  const base = origin ?? placeholderOrigin;
  return html`<details class="panel feeds" id="feeds" ${open ? html`open` : ""}>
    <summary><h2>Update feeds and client configuration</h2></summary>
    <p>
      Point ${product.name}'s updater at one of these public URLs. Channels nest: a beta client also
      gets newer stable releases, an alpha client both. Yanked versions are never offered.
    </p>
    ${
      origin === null
        ? html`<p class="alert" role="alert">
            The address this page was requested at is not a plain host name, so the URLs below show
            a placeholder. Behind a reverse proxy, set <code>TRUST_PROXY</code> so that its
            <code>X-Forwarded-Host</code> and <code>X-Forwarded-Proto</code> are used.
          </p>`
        : html`<p class="muted">
            Built from the address this page was requested at (<code>${origin}</code>). Behind a
            reverse proxy, <code>TRUST_PROXY</code> makes it the public one.
          </p>`
    }
    ${feedList(feedUrls(base, product.slug))}
    ${
      product.updatesRequireLicense
        ? html`<p class="alert">
            Updates of ${product.name} require a license: every feed and download wants the license
            key and the machine id of an activated machine (each snippet says how its updater sends
            them). An expired license still gets the versions published before it expired.
          </p>`
        : ""
    }
    ${clientConfigs(base, product).map((config) => {
      const id = snippetId(product.slug, config.id);
      return html`<section class="client-config" data-client="${config.id}">
        <div class="actions">
          <h3>${config.title}</h3>
          <span class="muted">${config.where}</span>
          <button type="button" class="secondary small" data-copy="${id}">Copy</button>
        </div>
        <pre class="snippet"><code id="${id}">${config.text}</code></pre>
        <p class="hint">${config.channels}</p>
        ${
          product.updatesRequireLicense
            ? html`<p class="hint license">License: <code>${config.license}</code></p>`
            : ""
        }
      </section>`;
    })}
  </details>`;
}
