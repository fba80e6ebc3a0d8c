import {
  type FeedRelease,
  findFeedReleases,
  isEdSignature,
  parseCurrentVersion,
} from "../../../domain/releases/update-feed.js";
import { sparkleVersion } from "../../../domain/releases/version.js";
import { sparkle } from "../../../contracts/releases.js";
import { type App, documentationOnly, routeSchema } from "../../contract-route.js";
import {
  archNames,
  type FeedDeps,
  fromFeedName,
  type OpenFeed,
  openFeed,
  parseChannel,
  queryParam,
  sendDocument,
} from "./feed-request.js";
import { type Platform, rolloutSteps } from "../../../contracts/vocabulary.js";
import type { Rollout } from "../../../domain/releases/rollout.js";

const platforms: Record<string, Platform> = { macos: "MACOS", windows: "WINDOWS" };
/** An appcast lists the newest versions only. */
const maxItems = 20;

/**
 * Sparkle 2 (macOS) and WinSparkle: an RSS 2.0 appcast, newest first. BETA and ALPHA items carry
 * sparkle:channel (Sparkle offers them only to clients that allow the channel); STABLE ones do
 * not. Every value is XML-escaped.
 */
export function sparkleFeedRoute(app: App, deps: FeedDeps): void {
  app.get(
    sparkle.url,
    { schema: routeSchema(sparkle), validatorCompiler: documentationOnly },
    async (request, reply) => {
      const { productSlug } = request.params;
      const channel = parseChannel(queryParam(request.query, "channel"));
      const platform = fromFeedName(platforms, request.params.platform, "platform");
      const arch = fromFeedName(archNames, request.params.arch, "arch");
      const feed = await openFeed(request, deps, {
        productSlug,
        platform,
        channel,
        currentVersion: sparkleClientVersion(request.headers["user-agent"]),
      });
      // Sparkle decides phased rollouts itself (sparkle:phasedRolloutInterval).
      const releases = await findFeedReleases(
        deps.db,
        { ...feed, updateFeed: "sparkle", platform, arch, channel, audience: "client" },
        maxItems,
      );
      const os = request.params.platform;
      const body = appcast(feed, os, releases);
      return sendDocument(request, reply, "application/xml; charset=utf-8", body);
    },
  );
}

/**
 * Sparkle's User-Agent is "<app name>/<CFBundleShortVersionString> Sparkle/<version>": the
 * client's version for the update-check counts, when it is semver.
 */
function sparkleClientVersion(userAgent: string | undefined): string | undefined {
  // A real one is under a hundred characters; a longer one is not read.
  const ua = userAgent === undefined || userAgent.length > 512 ? "" : userAgent;
  const end = ua.indexOf(" Sparkle/");
  const start = end < 0 ? -1 : ua.lastIndexOf("/", end - 1);
  if (start < 0) return undefined;
  const version = ua.slice(start + 1, end);
  if (version === "" || /\s/.test(version)) return undefined;
  try {
    return parseCurrentVersion(version);
  } catch {
    return undefined;
  }
}

function appcast(feed: OpenFeed, os: string, releases: FeedRelease[]): string {
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<rss version="2.0" xmlns:sparkle="http://www.andymatuschak.org/xml-namespaces/sparkle">',
    "  <channel>",
    `    <title>${xml(feed.product.name)}</title>`,
    ...releases.map((release) => item(release, os, feed)),
    "  </channel>",
    "</rss>",
    "",
  ].join("\n");
}

function item(release: FeedRelease, os: string, feed: OpenFeed): string {
  const entry = release.entries[0];
  const phased = release.critical ? null : sparklePhases(release.rollout, feed.now);
  const enclosure = entry
    ? [
        `url="${xml(feed.urlOf(release, entry))}"`,
        ...(entry.fileSize === null ? [] : [`length="${entry.fileSize}"`]),
        'type="application/octet-stream"',
        `sparkle:os="${xml(os)}"`,
        // Only an EdDSA signature: a Tauri (minisign) one would fail Sparkle's check.
        ...(entry.signature !== null && isEdSignature(entry.signature)
          ? [`sparkle:edSignature="${xml(entry.signature)}"`]
          : []),
      ].join(" ")
    : "";
  const lines = [
    "    <item>",
    `      <title>${xml(release.version)}</title>`,
    `      <pubDate>${rfc822(phased?.date ?? release.publishedAt)}</pubDate>`,
    `      <sparkle:version>${xml(sparkleVersion(release.version))}</sparkle:version>`,
    `      <sparkle:shortVersionString>${xml(release.version)}</sparkle:shortVersionString>`,
    ...(release.channel === "STABLE"
      ? []
      : [`      <sparkle:channel>${release.channel.toLowerCase()}</sparkle:channel>`]),
    ...(release.critical ? ["      <sparkle:criticalUpdate />"] : []),
    ...(phased
      ? [
          `      <sparkle:phasedRolloutInterval>${phased.intervalSeconds}</sparkle:phasedRolloutInterval>`,
        ]
      : []),
    ...(release.notes === null
      ? []
      : [`      <description sparkle:format="html">${xml(release.notes)}</description>`]),
    `      <enclosure ${enclosure} />`,
    "    </item>",
  ];
  return lines.join("\n");
}

const dayMs = 86_400_000;
const hourMs = 3_600_000;

/**
 * A rollout as Sparkle's phased groups read it: each client is in one of 7 groups (a number kept
 * in its defaults, % 7), and group g takes the item once `g × interval` has passed since its
 * pubDate, on scheduled checks (a user's "Check for Updates…" ignores the groups). A schedule is
 * that exactly: its step as the interval, its start as the date. A percentage is the nearest
 * number of groups (at least one), reached now and held: a day's interval and a date that many
 * days back, from the start of the previous hour (so a client clock an hour behind or a day
 * ahead still counts the same groups). Null: no phases (released, or 7 groups of 7).
 */
export function sparklePhases(
  rollout: Rollout | null,
  now: number,
): { intervalSeconds: number; date: number } | null {
  if (rollout === null) return null;
  if (rollout.stepHours !== null) {
    return { intervalSeconds: rollout.stepHours * 3600, date: rollout.startedAt };
  }
  const groups = Math.max(1, Math.round(((rollout.percent ?? 100) * rolloutSteps) / 100));
  if (groups >= rolloutSteps) return null;
  const hour = Math.floor(now / hourMs) * hourMs;
  return { intervalSeconds: dayMs / 1000, date: hour - hourMs - (groups - 1) * dayMs };
}

const days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const two = (n: number) => String(n).padStart(2, "0");

/**
 * RFC 822 in UTC with a numeric zone, `Thu, 26 Nov 2026 13:26:52 +0000`: the form of Sparkle's
 * own date pattern (`E, dd MMM yyyy HH:mm:ss Z`), which a phased rollout counts from.
 */
export function rfc822(epochMs: number): string {
  const d = new Date(epochMs);
  const date = `${two(d.getUTCDate())} ${months[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
  const time = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  return `${days[d.getUTCDay()]}, ${date} ${time} +0000`;
}

const xmlEntities: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&apos;",
};

/**
 * Escapes text for XML content and attributes. Characters XML 1.0 cannot carry at all (C0
 * controls other than tab and line breaks) are dropped, so the document always parses.
 */
export function xml(text: string): string {
  return (
    text
      // eslint-disable-next-line no-control-regex -- removing what XML cannot hold is the point
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, "")
      .replace(/[&<>"']/g, (c) => xmlEntities[c] ?? c)
  );
}
