import {
  createLicense,
  deleteLicense,
  moveLicense,
  resetMachines,
  endOfflinePlace,
  updateLicense,
} from "../../actions/licenses.js";
import type { LicenseView } from "../../domain/licenses/license-views.js";
import { listLicenses } from "../../domain/licenses/list-licenses.js";
import { showLicense } from "../../domain/licenses/show-license.js";
import { licenseSettings, statusNames } from "../../contracts/license-settings.js";
import { pageLimits } from "../../contracts/vocabulary.js";
import {
  integerOption,
  type Options,
  requiredOption,
  statusOption,
  stringOption,
  UsageError,
} from "../args.js";
import {
  cliActor,
  columns,
  type Command,
  type CommandHelp,
  describe,
  noArguments,
  oneArgument,
  table,
} from "./shared.js";
import { settingsHelp, settingValues } from "./settings.js";

const createHelp = settingsHelp(licenseSettings, "create");
const updateHelp = settingsHelp(licenseSettings, "update");

/** `[--option <value>]` for each optional setting. */
const synopsisOf = (help: ReadonlyArray<readonly [string, string]>) =>
  help.map(([option]) => `[${option}]`).join(" ");

function licenseText(license: LicenseView): string {
  return describe({ ...license });
}

/** `--expired yes|no` (undefined when not given). */
function expiredOption(options: Options): boolean | undefined {
  const value = stringOption(options, "expired");
  if (value === undefined) return undefined;
  if (value !== "yes" && value !== "no") throw new UsageError("--expired must be yes or no");
  return value === "yes";
}

/** `--search <text>`, or its short name `--q`; not both. */
function searchOption(options: Options): string | undefined {
  const search = stringOption(options, "search");
  const q = stringOption(options, "q");
  if (search !== undefined && q !== undefined) {
    throw new UsageError("give --search or --q (the same filter), not both");
  }
  return search ?? q;
}

function limitOfPage(options: Options): number {
  const limit = integerOption(options, "limit") ?? pageLimits.default;
  if (limit < 1 || limit > pageLimits.max) {
    throw new UsageError(`--limit must be from 1 to ${pageLimits.max}, got "${limit}"`);
  }
  return limit;
}

const listHelp: CommandHelp = {
  summary: "List licenses, newest first, a page at a time",
  synopsis:
    "[--product <slug>] [--status <status>] [--expired yes|no] [--search <text>] [--external-id <id>] [--limit <n>] [--cursor <c>]",
  options: [
    ["--product <slug>", "only this product's licenses"],
    ["--status <status>", `only ${statusNames} ones`],
    ["--expired yes|no", "only expired ones (yes) or only unexpired ones (no)"],
    ["--search <text>", "key prefix, or part of the customer's name, email or external id"],
    ["--q <text>", "the same as --search"],
    ["--external-id <id>", "only the license with this external id"],
    ["--limit <n>", `licenses per page, 1 to ${pageLimits.max} (default ${pageLimits.default})`],
    ["--cursor <c>", "the next page, as the previous page's last line names it"],
  ],
  example: "shipkey licenses list --product desktop-app --status ACTIVE --search grace",
};

export const licenseCommands: Record<string, Command> = {
  "licenses create": {
    help: {
      summary: "Create a license for a product",
      synopsis: [
        "--product <slug>",
        ...createHelp.required.map(([option]) => option),
        "[--key <key>]",
        synopsisOf(createHelp.optional),
      ].join(" "),
      options: [
        ["--product <slug>", "the product it is for (required)"],
        ...createHelp.required,
        ["--key <key>", "16 to 255 letters, digits, '.', '_', '~' or '-'; default: generated"],
        ...createHelp.optional,
      ],
      example:
        "shipkey licenses create --product desktop-app --max-machines 2 --edition pro --features sync,export",
    },
    run: async (db, args, options) => {
      noArguments(args);
      const license = await createLicense(db, cliActor(), {
        ...settingValues(licenseSettings, options, "create"),
        productSlug: requiredOption(options, "product"),
        licenseKey: stringOption(options, "key"),
      });
      return { data: license, text: licenseText(license) };
    },
  },
  "licenses update": {
    help: {
      summary: "Change a license's settings; only the options given change",
      synopsis: `<licenseKey> ${synopsisOf(updateHelp.optional)}`,
      options: [["<licenseKey>", "the license to change"], ...updateHelp.optional],
      example: "shipkey licenses update 7K2QD-M9XRT-4HZ1B-C8N3V-PQW5E --status SUSPENDED",
    },
    run: async (db, args, options) => {
      const licenseKey = oneArgument(args, "license key");
      const changes = settingValues(licenseSettings, options, "update");
      if (Object.values(changes).every((value) => value === undefined)) {
        throw new UsageError(`licenses update needs one of ${updateHelp.names.join(", ")}`);
      }
      const license = await updateLicense(db, cliActor(), licenseKey, changes);
      return { data: license, text: licenseText(license) };
    },
  },
  "licenses show": {
    help: {
      summary: "Show a license with its active machines and its past activations",
      synopsis: "<licenseKey>",
      options: [["<licenseKey>", "the license to show"]],
      example: "shipkey licenses show 7K2QD-M9XRT-4HZ1B-C8N3V-PQW5E",
    },
    run: async (db, args) => {
      const key = oneArgument(args, "license key");
      // Every active machine: the embedded first page, then the rest a page at a time.
      const { machinesNextCursor, ...license } = await showLicense(db, key);
      for (
        let cursor = machinesNextCursor;
        cursor !== null && license.machines.length < license.activeMachines;
      ) {
        const next = await showLicense(db, key, Date.now(), { cursor });
        license.machines.push(...next.machines);
        cursor = next.machinesNextCursor;
      }
      const { machines, pastActivations, offlinePlaces, ...rest } = license;
      const machineText = table(
        machines.map((m) => ({ ...m })),
        "No active machines.",
      );
      const pastText = columns(
        pastActivations.map((m) => ({
          machineId: m.machineId,
          machineName: m.machineName,
          activatedAt: m.activatedAt,
          deactivatedAt: m.deactivatedAt,
          deactivatedBy: m.deactivatedBy,
        })),
        "None.",
      );
      const placesText = columns(
        offlinePlaces.map((p) => ({
          machineId: p.machineId,
          machineName: p.machineName,
          deactivatedAt: p.deactivatedAt,
          endsAt: p.endsAt,
        })),
        "None.",
      );
      return {
        data: license,
        text:
          `${licenseText(rest)}\n\nActive machines:\n${machineText}\n\n` +
          `Offline places (deactivated, running on a certificate):\n${placesText}\n\n` +
          `Past activations:\n${pastText}`,
      };
    },
  },
  "licenses reset-machines": {
    help: {
      summary: "Deactivate every machine of a license at once",
      synopsis: "<licenseKey>",
      options: [["<licenseKey>", "the license whose machines to deactivate"]],
      example: "shipkey licenses reset-machines 7K2QD-M9XRT-4HZ1B-C8N3V-PQW5E",
    },
    run: async (db, args) => {
      const result = await resetMachines(db, cliActor(), oneArgument(args, "license key"));
      const ended = result.machineIds.length;
      return {
        data: result,
        text:
          `Deactivated ${ended} machine${ended === 1 ? "" : "s"}` +
          (result.certificatesHeld > 0
            ? `; ${result.certificatesHeld} machine(s) holding an unexpired certificate keep an offline place until it expires`
            : ""),
      };
    },
  },
  "licenses end-offline-place": {
    help: {
      summary: "Stop counting a deactivated machine that runs on its certificate",
      synopsis: "<licenseKey> --machine <machineId>",
      options: [
        ["<licenseKey>", "the license"],
        ["--machine <machineId>", "the deactivated machine (licenses show lists the places)"],
      ],
      example: "shipkey licenses end-offline-place 7K2QD-M9XRT-4HZ1B-C8N3V-PQW5E --machine 3f9a…",
    },
    run: async (db, args, options) => {
      const licenseKey = oneArgument(args, "license key");
      const machineId = requiredOption(options, "machine");
      const result = await endOfflinePlace(db, cliActor(), licenseKey, machineId);
      return {
        data: { ended: true, licenseKey, machineId, endsAt: result.endsAt },
        text: `Offline place of ${machineId} ended; its certificate works offline until ${result.endsAt} but no longer counts`,
      };
    },
  },
  "licenses move": {
    help: {
      summary: "Move a license to another product",
      synopsis: "<licenseKey> --product <slug>",
      options: [
        ["<licenseKey>", "the license to move"],
        ["--product <slug>", "the product it moves to"],
      ],
      example: "shipkey licenses move 7K2QD-M9XRT-4HZ1B-C8N3V-PQW5E --product desktop-app-pro",
    },
    run: async (db, args, options) => {
      const licenseKey = oneArgument(args, "license key");
      const product = requiredOption(options, "product");
      const license = await moveLicense(db, cliActor(), licenseKey, product);
      return { data: license, text: licenseText(license) };
    },
  },
  "licenses delete": {
    help: {
      summary: "Delete a license that has no active machines",
      synopsis: "<licenseKey>",
      options: [["<licenseKey>", "the license to delete"]],
      example: "shipkey licenses delete 7K2QD-M9XRT-4HZ1B-C8N3V-PQW5E",
    },
    run: async (db, args) => {
      const licenseKey = oneArgument(args, "license key");
      const license = await deleteLicense(db, cliActor(), licenseKey);
      return {
        data: { deleted: true, licenseKey, product: license.product },
        text: `Deleted license ${licenseKey}`,
      };
    },
  },
  "licenses list": {
    help: listHelp,
    run: async (db, args, options) => {
      noArguments(args);
      const page = await listLicenses(db, {
        product: stringOption(options, "product"),
        status: statusOption(options),
        expired: expiredOption(options),
        q: searchOption(options),
        externalId: stringOption(options, "external-id"),
        limit: limitOfPage(options),
        cursor: stringOption(options, "cursor"),
      });
      const lines = columns(
        page.items.map((l) => ({
          licenseKey: l.licenseKey,
          product: l.product,
          status: l.status,
          expiresAt: l.expiresAt ?? "never",
          machines: `${l.activeMachines}/${l.maxMachines}`,
          customer: l.customerEmail ?? l.customerName,
          externalId: l.externalId,
        })),
        "No licenses.",
      );
      const more = page.nextCursor === null ? "" : `\n\nMore: add --cursor ${page.nextCursor}`;
      return { data: page, text: `${lines}${more}` };
    },
  },
};
