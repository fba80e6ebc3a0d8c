import { ShipkeyError } from "../errors.js";

/** Documented request limits (docs/decisions.md). Column sizes in the schema match these. */
export const limits = {
  identifier: 255,
  machineName: 255,
  platform: 255,
  name: 255,
  edition: 255,
  feature: 255,
  features: 100,
  downloadUrl: 2048,
  signature: 8 * 1024,
  releaseNotes: 64 * 1024,
  note: 4096,
  releasesPerPublish: 50,
  licenseBodyBytes: 64 * 1024,
  publishBodyBytes: 1024 * 1024,
} as const;

export function assertMaxLength(
  field: string,
  value: string | null | undefined,
  max: number,
): void {
  if (value !== null && value !== undefined && value.length > max) {
    throw new ShipkeyError("FIELD_TOO_LONG", `${field} must be at most ${max} characters`);
  }
}
