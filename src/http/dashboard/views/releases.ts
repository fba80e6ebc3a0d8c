import type { AuditEntry } from "../../../domain/audit/audit-log.js";
import type { ReleaseVersionView } from "../../../domain/releases/manage-releases.js";
import type { UsageReport } from "../../../domain/releases/usage-report.js";
import { feedsOffering } from "../../../domain/releases/update-feed.js";
import { sparkleVersion } from "../../../domain/releases/version.js";
import type { Product } from "../../../domain/products/products.js";
import { type Arch, arches, type Platform, platforms } from "../../../contracts/vocabulary.js";
import {
  actionForm,
  badge,
  csrfField,
  type Html,
  html,
  layout,
  type PageContext,
  productPicker,
  raw,
  when,
} from "../html.js";
import { feedsSection } from "./feeds.js";
import { machinesPerVersion } from "./versions-in-use.js";

/** Who last published a version (its latest release.publish entry). */
export type Publisher = { actor: AuditEntry["actor"]; at: string };

function publisherLabel(publisher: Publisher): string {
  const { type, label } = publisher.actor;
  return type === "api_key" ? `API key “${label}”` : label;
}

/** The window of the usage tables. */
export const usageDays = 30;

/** Versions one page of a product's releases shows. */
const versionsPerPage = 20;

/** One product's releases, and what is known of their use. */
export interface ProductReleases {
  product: Product;
  versions: ReleaseVersionView[];
  publishers: Map<string, Publisher>;
  usage: UsageReport;
}

/** What the releases page shows: the products to pick from, and the picked one's releases. */
export interface ReleasesPage {
  context: PageContext;
  products: Product[];
  slug: string;
  shown: ProductReleases | null;
  /** The page of versions shown, from 1. */
  page: number;
  origin: string | null;
}

export function releasesView(page: ReleasesPage): Html {
  const { context, products, shown } = page;
  const content =
    products.length === 0
      ? noProducts()
      : html`${productPicker(products, page.slug)}
        ${
          shown
            ? html`${releasesOf(
                shown.product,
                shown.versions.slice(
                  (page.page - 1) * versionsPerPage,
                  page.page * versionsPerPage,
                ),
                shown.usage,
                page.origin,
                context,
                shown.publishers,
              )}
              ${versionPager(shown.product.slug, page.page, shown.versions.length)}`
            : ""
        }`;
  return layout("Releases", "releases", context, content);
}

/** Links to the newer and older versions of a product, when it has more than a page of them. */
function versionPager(slug: string, page: number, count: number): Html | string {
  const pages = Math.ceil(count / versionsPerPage);
  if (pages <= 1) return "";
  const href = (to: number) =>
    `/admin/releases?product=${encodeURIComponent(slug)}${to === 1 ? "" : `&page=${to}`}`;
  return html`<nav class="pager" aria-label="Versions">
    ${page > 1 ? html`<a href="${href(page - 1)}" rel="prev">‹ Newer versions</a>` : ""}
    <span class="muted">Page ${page} of ${pages}</span>
    ${page < pages ? html`<a href="${href(page + 1)}" rel="next">Older versions ›</a>` : ""}
  </nav>`;
}

function noProducts(): Html {
  return html`<div class="empty">
    No products yet. <a href="/admin/products">Create one</a>, then publish from CI.
  </div>`;
}

/**
 * One product's releases page: its feeds (open while nothing is published yet), how updates are
 * delivered, the versions in use, then its versions, newest first by semver, with their
 * downloads.
 */
function releasesOf(
  product: Product,
  versions: ReleaseVersionView[],
  usage: UsageReport,
  origin: string | null,
  context: PageContext,
  publishers: Map<string, Publisher>,
): Html {
  const downloads = (version: string, platform: string) =>
    usage.downloads
      .filter((d) => d.version === version && (platform === "" || d.platform === platform))
      .reduce((sum, d) => sum + d.count, 0);
  return html`${feedsSection(origin, product, versions.length === 0)}
  ${deliveryPanel(product, context.csrfToken)} ${versionsInUse(usage)}
  ${
    versions.length === 0
      ? html`<div class="empty">
          <p>No releases for this product yet.</p>
          <p>
            Publish from CI with <code>shipkey publish</code> or
            <code>POST /api/releases/publish</code> and an API key holding
            <code>releases:write</code>.
          </p>
        </div>`
      : versions.map((v) =>
          versionPanel(
            product.slug,
            v,
            context.csrfToken,
            downloads,
            publishers.get(`${product.slug}@${v.version}`),
          ),
        )
  }`;
}

function deliveryPanel(product: Product, csrfToken: string): Html {
  const path = `/admin/releases/${encodeURIComponent(product.slug)}/delivery`;
  const box = (name: string, on: boolean, label: string, hint: string) =>
    html`<label class="check"
      ><input type="checkbox" name="${name}" ${on ? html`checked` : ""} /> ${label}
      <span class="muted">${hint}</span></label
    >`;
  return html`<section class="panel" id="delivery">
    <h2>Update delivery</h2>
    <form method="post" action="${path}">
      ${csrfField(csrfToken)}
      ${box(
        "updatesRequireLicense",
        product.updatesRequireLicense,
        "Require a license for updates",
        "Feeds and downloads answer only machines activated on a usable license (Authorization: License <key> and Shipkey-Machine headers, or licenseKey and machineId parameters). An expired license keeps the versions published before it expired.",
      )}
      ${box(
        "downloadRedirects",
        product.downloadRedirects,
        "Hand out counted download links",
        "Feeds give /api/downloads/… URLs, which redirect to the stored file and count downloads.",
      )}
      <button type="submit">Save</button>
    </form>
  </section>`;
}

function versionsInUse(usage: UsageReport): Html {
  const rows = usage.updateChecks.slice(0, 20);
  return html`<section class="panel" id="versions-in-use">
    <h2>Versions in use <span class="muted">active machines</span></h2>
    ${machinesPerVersion(usage.machinesByVersion, 20)}
    <h3>Update checks <span class="muted">since ${usage.since}</span></h3>
    ${
      rows.length === 0
        ? html`<p class="muted">No update checks yet.</p>`
        : html`<table class="update-checks">
              <thead>
                <tr>
                  <th>Version</th>
                  <th>Platform</th>
                  <th>Channel</th>
                  <th>Checks</th>
                </tr>
              </thead>
              <tbody>
                ${rows.map(
                  (row) =>
                    html`<tr>
                      <td>${row.currentVersion ?? html`<span class="muted">unknown</span>`}</td>
                      <td>${row.platform}</td>
                      <td>${row.channel}</td>
                      <td>${row.count}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
            <p class="hint">
              Requests to the update feeds. “unknown”: the feed client sent no version
              (electron-updater never does), or one never published.
            </p>`
    }
  </section>`;
}

function versionPanel(
  slug: string,
  v: ReleaseVersionView,
  csrfToken: string,
  downloads: (version: string, platform: string) => number,
  publisher: Publisher | undefined,
): Html {
  const versionPath = `/admin/releases/${encodeURIComponent(slug)}/${encodeURIComponent(v.version)}`;
  return html`<section class="panel release" data-version="${v.version}">
    <div class="actions">
      <h2>${v.version}</h2>
      ${badge(v.channel)} ${v.yankedAt ? badge("yanked") : ""}
      <span class="muted">published ${when(v.createdAt)}</span>
      ${
        publisher
          ? html`<span class="muted published-by"
              >Published by ${publisherLabel(publisher)} ${when(publisher.at)}</span
            >`
          : ""
      }
      <span class="muted downloads"
        >${downloads(v.version, "")} downloads in ${usageDays} days</span
      >
      ${actionForm(
        csrfToken,
        {
          action: `${versionPath}/${v.yankedAt ? "unyank" : "yank"}`,
          class: "inline",
          ...(v.yankedAt
            ? {}
            : { confirm: `Yank ${v.version}? The update feeds stop offering it at once.` }),
        },
        { label: v.yankedAt ? "Restore to feeds" : "Yank from feeds", class: "secondary" },
      )}
      ${actionForm(
        csrfToken,
        {
          action: `${versionPath}/delete`,
          class: "inline",
          confirm: `Delete version ${v.version} and all its files?`,
        },
        { label: "Delete version", class: "danger" },
      )}
    </div>
    ${rolloutPanel(versionPath, v, csrfToken)}
    ${v.releaseNotesHtml ? html`<div class="notes">${raw(v.releaseNotesHtml)}</div>` : ""}
    <table class="matrix">
      <thead>
        <tr>
          <th>Platform</th>
          ${arches.map((a) => html`<th>${a}</th>`)}
          <th>Downloads</th>
        </tr>
      </thead>
      <tbody>
        ${platforms.map(
          (p) =>
            html`<tr>
              <th scope="row">${p}</th>
              ${arches.map((a) => entryCell(versionPath, v, p, a, csrfToken))}
              <td>${downloads(v.version, p)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </section>`;
}

/** A version's file for one platform and arch: its link, size, feeds and Remove; or a dash. */
function entryCell(
  versionPath: string,
  v: ReleaseVersionView,
  p: Platform,
  a: Arch,
  csrfToken: string,
): Html {
  const entry = v.entries.find((e) => e.platform === p && e.arch === a);
  if (!entry) return html`<td class="no">—</td>`;
  const size = entry.fileSize === null ? "" : (entry.fileSize / 1048576).toFixed(1);
  const sizeLine = size ? html`<br /><span class="muted">${size} MiB</span>` : "";
  const feeds = feedsOffering({ ...entry, platform: p }).join(" · ");
  const feedsLine = html`<br /><span class="muted feeds">${feeds}</span>`;
  return html`<td class="yes">
    <a href="${entry.downloadUrl}" rel="noreferrer">✓ download</a>${sizeLine}${feedsLine}
    ${actionForm(
      csrfToken,
      {
        action: `${versionPath}/${p}/${a}/delete`,
        confirm: `Remove the ${p} ${a} file of ${v.version}?`,
      },
      {
        label: "Remove",
        class: "danger small",
        ariaLabel: `Remove ${p} ${a} of ${v.version}`,
      },
    )}
  </td>`;
}

/** A rollout in words: `Rolling out to 10 %`, `Paused at 43 % (a step every 24 h)`, `Released`. */
function rolloutState(v: ReleaseVersionView): string {
  const { rollout } = v;
  if (!rollout) return "Released to every machine";
  const schedule = rollout.stepHours === null ? "" : ` (a step every ${rollout.stepHours} h)`;
  const state = rollout.state === "paused" ? "Paused at" : "Rolling out to";
  return `${state} ${rollout.percent} %${schedule}`;
}

/**
 * A version's rollout: its state and share, a percentage to set, pause / resume / complete, the
 * critical flag, and the Sparkle version the app's CFBundleVersion must be.
 */
function rolloutPanel(versionPath: string, v: ReleaseVersionView, csrfToken: string): Html {
  const { rollout } = v;
  const button = (action: string, label: string, cls = "secondary small") =>
    actionForm(
      csrfToken,
      { action: `${versionPath}/rollout/${action}`, class: "inline" },
      {
        label,
        class: cls,
      },
    );
  return html`<div class="actions rollout" data-rollout="${rollout?.state ?? "released"}">
    <strong>${rolloutState(v)}</strong> ${v.critical ? badge("critical") : ""}
    <form method="post" action="${versionPath}/rollout" class="inline">
      ${csrfField(csrfToken)}
      <label
        >Roll out to
        <input
          type="number"
          name="percent"
          min="1"
          max="100"
          required
          value="${rollout?.percent ?? 10}"
        />
        %</label
      ><button type="submit" class="secondary small">${rollout ? "Set" : "Start rollout"}</button>
    </form>
    ${rollout?.state === "rolling" ? button("pause", "Pause", "danger small") : ""}
    ${rollout?.state === "paused" ? button("resume", "Resume") : ""}
    ${rollout ? button("complete", "Release to all") : ""}
    ${actionForm(
      csrfToken,
      {
        action: `${versionPath}/critical`,
        class: "inline",
        hidden: { critical: v.critical ? "off" : "on" },
      },
      { label: v.critical ? "Not critical" : "Mark critical", class: "secondary small" },
    )}
    <span class="muted">Sparkle CFBundleVersion <code>${sparkleVersion(v.version)}</code></span>
  </div>`;
}
