import type { Migration } from "kysely";
import * as initial from "./0001_initial.js";
import * as admin from "./0002_admin.js";
import * as admins from "./0003_admins.js";
import * as activationSightings from "./0004_activation_sightings.js";
import * as machineSightings from "./0005_machine_sightings.js";
import * as activeMachineList from "./0006_active_machine_list.js";
import * as lastSeenLogFile from "./0007_last_seen_log_file.js";
import * as licenseSlots from "./0008_license_slots.js";
import * as plainStorage from "./0009_plain_storage.js";
import * as idempotencyAndRetention from "./0010_idempotency_and_retention.js";
import * as updateFeeds from "./0011_update_feeds.js";
import * as tauriPublicKey from "./0012_tauri_public_key.js";
import * as signingKeys from "./0013_signing_keys.js";
import * as updateAccessAndCounts from "./0014_update_access_and_counts.js";
import * as idempotencyApplied from "./0015_idempotency_applied.js";
import * as licenseIntegrity from "./0016_license_integrity.js";
import * as apiKeyProducts from "./0017_api_key_products.js";
import * as auditWithoutLicenseKeys from "./0018_audit_without_license_keys.js";
import * as webhooks from "./0019_webhooks.js";
import * as rollouts from "./0020_rollouts.js";
import * as machineLeases from "./0021_machine_leases.js";
import * as dailyCounts from "./0022_daily_counts.js";
import * as machineAppVersions from "./0023_machine_app_versions.js";
import * as licenseOverviewIndexes from "./0024_license_overview_indexes.js";
import * as webhookUrlChanges from "./0025_webhook_url_changes.js";
import * as apiKeyCreators from "./0026_api_key_creators.js";
import * as releaseNotesHtml from "./0027_release_notes_html.js";
import * as plans from "./0028_plans.js";
import * as licensePlans from "./0029_license_plans.js";
import * as emailOutbox from "./0030_email_outbox.js";
import * as emailTemplates from "./0031_email_templates.js";
import * as integrations from "./0032_integrations.js";
import * as integrationEvents from "./0033_integration_events.js";
import * as sales from "./0034_sales.js";

// Imported statically (not read from a folder at run time) so the compiled service and the
// tests run exactly the same list, in this order.
export const migrations: Record<string, Migration> = {
  "0001_initial": initial,
  "0002_admin": admin,
  "0003_admins": admins,
  "0004_activation_sightings": activationSightings,
  "0005_machine_sightings": machineSightings,
  "0006_active_machine_list": activeMachineList,
  "0007_last_seen_log_file": lastSeenLogFile,
  "0008_license_slots": licenseSlots,
  "0009_plain_storage": plainStorage,
  "0010_idempotency_and_retention": idempotencyAndRetention,
  "0011_update_feeds": updateFeeds,
  "0012_tauri_public_key": tauriPublicKey,
  "0013_signing_keys": signingKeys,
  "0014_update_access_and_counts": updateAccessAndCounts,
  "0015_idempotency_applied": idempotencyApplied,
  "0016_license_integrity": licenseIntegrity,
  "0017_api_key_products": apiKeyProducts,
  "0018_audit_without_license_keys": auditWithoutLicenseKeys,
  "0019_webhooks": webhooks,
  "0020_rollouts": rollouts,
  "0021_machine_leases": machineLeases,
  "0022_daily_counts": dailyCounts,
  "0023_machine_app_versions": machineAppVersions,
  "0024_license_overview_indexes": licenseOverviewIndexes,
  "0025_webhook_url_changes": webhookUrlChanges,
  "0026_api_key_creators": apiKeyCreators,
  "0027_release_notes_html": releaseNotesHtml,
  "0028_plans": plans,
  "0029_license_plans": licensePlans,
  "0030_email_outbox": emailOutbox,
  "0031_email_templates": emailTemplates,
  "0032_integrations": integrations,
  "0033_integration_events": integrationEvents,
  "0034_sales": sales,
};
