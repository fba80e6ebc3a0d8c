import { type Platform, platforms } from "../../contracts/vocabulary.js";

/** What an entry needs for a feed's updater to install it. */
export type EntryNeed = "signature" | "sha512" | "zip";

/** What one update feed serves (docs/update-feeds.md). */
export interface FeedRule {
  /** The feed's name under each file on the dashboard's Releases page. */
  label: string;
  /** The platforms whose entries it serves. */
  platforms: readonly Platform[];
  /** What an entry needs to be served; null: every entry. */
  needs: EntryNeed | null;
  /** The notes it serves: the HTML rendered at publish, or the text as published. */
  notes: "html" | "text";
}

/**
 * Which entries each feed serves, and with which notes: the feeds' query reads it
 * (update-feed.ts), and so do the dashboard's list of the feeds that offer a file and publish's
 * warnings. Tauri refuses an update without a signature, electron-updater one without a sha512,
 * and Squirrel.Mac installs only .zip archives; Sparkle (macOS) and WinSparkle show HTML notes.
 */
export const updateFeeds = {
  tauri: { label: "Tauri", platforms, needs: "signature", notes: "text" },
  electron: { label: "electron-updater", platforms, needs: "sha512", notes: "text" },
  sparkle: { label: "Sparkle", platforms: ["MACOS", "WINDOWS"], needs: null, notes: "html" },
  squirrelMac: { label: "Squirrel.Mac", platforms: ["MACOS"], needs: "zip", notes: "text" },
  generic: { label: "generic", platforms, needs: null, notes: "text" },
} as const satisfies Record<string, FeedRule>;

export type UpdateFeed = keyof typeof updateFeeds;

/** An entry as the rules read it. */
export interface ServedEntry {
  platform: Platform;
  downloadUrl: string;
  signature: string | null;
  sha512?: string | null;
}

/** Whether a feed serves an entry (its version aside: channel, rollout, yanked). */
export function serves(feed: UpdateFeed, entry: ServedEntry): boolean {
  const rule: FeedRule = updateFeeds[feed];
  return rule.platforms.includes(entry.platform) && hasNeed(rule.needs, entry);
}

/** Whether an entry has what a feed needs. */
export function hasNeed(need: EntryNeed | null, entry: ServedEntry): boolean {
  if (need === "signature") return entry.signature !== null;
  if (need === "sha512") return (entry.sha512 ?? null) !== null;
  if (need === "zip") return isZip(entry.downloadUrl);
  return true;
}

/** A .zip archive: the URL's path (its query and fragment aside) ends in .zip, any case. */
export function isZip(downloadUrl: string): boolean {
  try {
    return new URL(downloadUrl).pathname.toLowerCase().endsWith(".zip");
  } catch {
    return false; // stored by hand, not through publish
  }
}
