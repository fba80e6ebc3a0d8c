import { XMLParser } from "fast-xml-parser";

/**
 * Sparkle's own update decision, ported line by line from sparkle-project/Sparkle (2.x):
 * SUStandardVersionComparator (the version order), and from SUAppcastDriver and SUAppcastItem the
 * parts an appcast decides: the channel filter, the phased rollout groups, critical updates, the
 * pubDate pattern and "the best item, if newer than the host". Tests read the appcast with it, so
 * the feed is checked against what Sparkle does, not against what the server believes.
 */

type CharacterType = "number" | "string" | "period" | "punctuation" | "whitespace" | "dash";

/** typeOfCharacter: "." and "-" by the whole string, else by its first UTF-16 unit. */
function typeOf(part: string): CharacterType {
  if (part === ".") return "period";
  if (part === "-") return "dash";
  const first = part.charAt(0);
  if (/\p{Nd}/u.test(first)) return "number";
  if (/\s/u.test(first)) return "whitespace";
  if (/\p{P}/u.test(first)) return "punctuation";
  return "string";
}

const isSeparator = (t: CharacterType) =>
  t === "period" || t === "punctuation" || t === "whitespace";

/** isEqualCharacterTypeClassForTypeA: separators are one class, the others each their own. */
const sameClass = (a: CharacterType, b: CharacterType) =>
  isSeparator(a) ? isSeparator(b) : a === b;

/** splitVersionString: runs of one type; every separator alone; stops at the first "-". */
function split(version: string): string[] {
  const parts: string[] = [];
  if (version.length === 0) return parts;
  let s = version.charAt(0);
  let oldType = typeOf(s);
  for (let i = 1; i <= version.length - 1; i += 1) {
    const character = version.charAt(i);
    const newType = typeOf(character);
    if (newType === "dash") break;
    if (oldType !== newType || isSeparator(oldType)) {
      parts.push(s);
      s = character;
    } else {
      s += character;
    }
    oldType = newType;
  }
  parts.push(s);
  return parts;
}

function numberAndPeriodPrefix(parts: string[]): number {
  let count = 0;
  for (const part of parts) {
    const t = typeOf(part);
    if (t === "number" || t === "period") count += 1;
    else break;
  }
  return count;
}

/** balanceVersionPartsA: "1.1" against "1.0.0" becomes "1.1.0". */
function balance(a: string[], b: string[]): void {
  const [countA, countB] = [numberAndPeriodPrefix(a), numberAndPeriodPrefix(b)];
  const pad = (to: string[], toCount: number, from: string[], fromCount: number) => {
    for (let i = toCount; i < fromCount; i += 1) {
      to.splice(i, 0, typeOf(from[i] ?? "") === "period" ? "." : "0");
    }
  };
  if (countA > countB) pad(b, countB, a, countA);
  else if (countB > countA) pad(a, countA, b, countB);
}

const longLongMax = 2n ** 63n - 1n;
/** NSString longLongValue of a run of digits (clamped like strtoll). */
function longLong(part: string): bigint {
  if (!/^[0-9]+$/.test(part)) return 0n;
  const value = BigInt(part);
  return value > longLongMax ? longLongMax : value;
}

/** compareVersion:toVersion: -1 ascending (b is newer), 0 same, 1 descending. */
export function compareSparkleVersions(versionA: string, versionB: string): -1 | 0 | 1 {
  const partsA = split(versionA);
  const partsB = split(versionB);
  balance(partsA, partsB);
  const n = Math.min(partsA.length, partsB.length);
  for (let i = 0; i < n; i += 1) {
    const [partA, partB] = [partsA[i] ?? "", partsB[i] ?? ""];
    const [typeA, typeB] = [typeOf(partA), typeOf(partB)];
    if (sameClass(typeA, typeB)) {
      if (typeA === "number") {
        const [valueA, valueB] = [longLong(partA), longLong(partB)];
        if (valueA > valueB) return 1;
        if (valueA < valueB) return -1;
      } else if (typeA === "string") {
        if (partA !== partB) return partA < partB ? -1 : 1;
      }
    } else if (typeA !== "string" && typeB === "string") {
      return 1;
    } else if (typeA === "string" && typeB !== "string") {
      return -1;
    } else {
      return typeA === "number" ? 1 : -1;
    }
  }
  if (partsA.length !== partsB.length) {
    const [missing, shorter, larger] =
      partsA.length > partsB.length
        ? [partsA[n] ?? "", -1 as const, 1 as const]
        : [partsB[n] ?? "", 1 as const, -1 as const];
    return typeOf(missing) === "string" ? shorter : larger;
  }
  return 0;
}

/** One appcast item, as SUAppcastItem reads it. */
export interface SparkleItem {
  /** sparkle:version */
  version: string;
  channel?: string;
  /** pubDate, parsed with Sparkle's pattern; undefined when it does not parse. */
  date?: Date;
  phasedRolloutInterval?: number;
  criticalUpdate: boolean;
}

const rfc822 =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{2}) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (\d{4}) (\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})$/;
const monthNames = [
  "Jan",
  "Feb",
  "Mar",
  "Apr",
  "May",
  "Jun",
  "Jul",
  "Aug",
  "Sep",
  "Oct",
  "Nov",
  "Dec",
];

/** `E, dd MMM yyyy HH:mm:ss Z` (en_US), its RFC 822 numeric zone form; anything else: nil. */
export function parseSparkleDate(text: string): Date | undefined {
  const m = rfc822.exec(text);
  if (!m) return undefined;
  const [, , dd, mmm, yyyy, hh, mi, ss, sign, zh, zm] = m;
  const utc = Date.UTC(
    Number(yyyy),
    monthNames.indexOf(mmm ?? ""),
    Number(dd),
    Number(hh),
    Number(mi),
    Number(ss),
  );
  const offset = (Number(zh) * 60 + Number(zm)) * 60_000 * (sign === "-" ? -1 : 1);
  return new Date(utc - offset);
}

/** What the host app is: its CFBundleVersion, the channels it allows, its phased group. */
export interface SparkleHost {
  version: string;
  allowedChannels: string[];
  /**
   * SUPhasedUpdateGroupInfo: a random number % 7, kept in the user's defaults; only background
   * (scheduled) checks use it, a user's "Check for Updates…" passes null.
   */
  phasedGroup: number | null;
  now: Date;
}

/** itemIsReadyForPhasedRollout */
function readyForPhasedRollout(item: SparkleItem, host: SparkleHost): boolean {
  if (host.phasedGroup === null || item.criticalUpdate) return true;
  if (item.phasedRolloutInterval === undefined) return true;
  if (item.date === undefined) return true;
  const sinceRelease = (host.now.getTime() - item.date.getTime()) / 1000;
  return sinceRelease >= item.phasedRolloutInterval * host.phasedGroup;
}

/**
 * The update Sparkle installs, or null: items of the default channel or an allowed one, ready
 * for the host's phased group, the best by the comparator (the first of equals), if newer than
 * the host's version.
 */
export function sparkleChooses<T extends SparkleItem>(items: T[], host: SparkleHost): T | null {
  let best: T | null = null;
  for (const item of items) {
    if (item.channel !== undefined && !host.allowedChannels.includes(item.channel)) continue;
    if (!readyForPhasedRollout(item, host)) continue;
    if (best === null || compareSparkleVersions(best.version, item.version) === -1) best = item;
  }
  if (best === null || compareSparkleVersions(host.version, best.version) !== -1) return null;
  return best;
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "@",
  // An empty element (<sparkle:criticalUpdate />) reads as "", present.
  isArray: (name) => name === "item",
});

type RawItem = Record<string, unknown>;

/** An appcast's items, as SUAppcastItem reads them. */
export function sparkleItems(body: string): Array<SparkleItem & { raw: RawItem }> {
  const items = (parser.parse(body).rss.channel.item ?? []) as RawItem[];
  return items.map((raw) => {
    const interval = raw["sparkle:phasedRolloutInterval"];
    return {
      raw,
      version: String(raw["sparkle:version"]),
      ...(raw["sparkle:channel"] === undefined ? {} : { channel: String(raw["sparkle:channel"]) }),
      ...(typeof raw.pubDate === "string" ? { date: parseSparkleDate(raw.pubDate) } : {}),
      ...(interval === undefined ? {} : { phasedRolloutInterval: Number(interval) }),
      criticalUpdate: "sparkle:criticalUpdate" in raw,
    };
  });
}
