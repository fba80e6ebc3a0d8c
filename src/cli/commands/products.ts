import {
  createProduct,
  prepareSigningKey,
  promoteSigningKey,
  removeSigningKey,
  setDeactivationLimit,
  setMachineLease,
  setOfflineAllowance,
  setOfflinePeriod,
  updateProduct,
} from "../../actions/products.js";
import { listProducts } from "../../domain/products/products.js";
import { listProductKeys } from "../../domain/signing/signing-keys.js";
import { productSettings, type ProductSettingsTable } from "../../contracts/product-settings.js";
import { type CliOption, cliOptionOf } from "../../contracts/settings.js";
import { type Options, requiredOption, stringOption, switchOption, UsageError } from "../args.js";
import {
  cliActor,
  cliMasterKey,
  type Command,
  describe,
  masterKeyIfAvailable,
  noArguments,
  oneArgument,
  table,
} from "./shared.js";
import { optionHelp, optionSpec, requiredValue } from "./settings.js";

const slugArgument = ["<slug>", "the product's slug"] as const;

/** The option of one of the product's settings (each has its own `products set-*` command). */
function settingOption(name: keyof ProductSettingsTable): CliOption {
  const o = cliOptionOf(productSettings[name], "update");
  if (o === undefined) throw new Error(`product setting ${name} has no CLI option`);
  return o;
}

/** The setting's value from its option, which its command requires. */
const requiredSetting = <K extends keyof ProductSettingsTable>(options: Options, name: K) =>
  requiredValue(options, productSettings[name], settingOption(name));

export const productCommands: Record<string, Command> = {
  "products create": {
    help: {
      summary: "Create a product and, where it can, its signing key",
      synopsis: "--slug <slug> --name <name>",
      options: [
        ["--slug <slug>", "the product's identifier in URLs and requests (required)"],
        ["--name <name>", "its display name (required)"],
      ],
      example: 'shipkey products create --slug desktop-app --name "Desktop App"',
    },
    run: async (db, args, options, context) => {
      noArguments(args);
      const product = await createProduct(
        db,
        cliActor(),
        { slug: requiredOption(options, "slug"), name: requiredOption(options, "name") },
        await masterKeyIfAvailable(db, context),
      );
      return { data: product, text: describe({ ...product }) };
    },
  },
  "products list": {
    help: {
      summary: "List the products with their settings",
      synopsis: "",
      options: [],
      example: "shipkey products list --json",
    },
    run: async (db, args) => {
      noArguments(args);
      const products = await listProducts(db);
      return {
        data: products,
        text: table(
          products.map((p) => ({ ...p })),
          "No products yet.",
        ),
      };
    },
  },
  "products update": {
    help: {
      summary: "Change a product's name, Tauri key, update and download settings",
      synopsis:
        "<slug> [--name <name>] [--tauri-public-key <key>|none] [--updates-require-license on|off] [--download-redirects on|off]",
      options: [
        slugArgument,
        ["--name <name>", "a new display name"],
        [
          "--tauri-public-key <key>|none",
          "tauri.conf.json's key; publish then refuses other signatures",
        ],
        ["--updates-require-license on|off", "the update feeds answer only with a valid license"],
        ["--download-redirects on|off", "feeds link through the server, which counts downloads"],
      ],
      example: "shipkey products update desktop-app --updates-require-license on",
    },
    run: async (db, args, options) => {
      const slug = oneArgument(args, "product slug");
      const name = stringOption(options, "name");
      const key = stringOption(options, "tauri-public-key");
      const updatesRequireLicense = switchOption(options, "updates-require-license");
      const downloadRedirects = switchOption(options, "download-redirects");
      if ([name, key, updatesRequireLicense, downloadRedirects].every((v) => v === undefined)) {
        throw new UsageError(
          "products update needs --name, --tauri-public-key, --updates-require-license or --download-redirects",
        );
      }
      const product = await updateProduct(db, cliActor(), slug, {
        name,
        tauriPublicKey: key === "none" ? null : key,
        updatesRequireLicense,
        downloadRedirects,
      });
      return { data: product, text: describe({ ...product }) };
    },
  },
  "products keys": {
    help: {
      summary: "Show a product's public signing keys: current, next, retired",
      synopsis: "<slug>",
      options: [slugArgument],
      example: "shipkey products keys desktop-app",
    },
    run: async (db, args) => {
      const keys = await listProductKeys(db, oneArgument(args, "product slug"));
      return {
        data: keys,
        text: table(
          keys.map((k) => ({
            kid: k.kid,
            status: k.status,
            createdAt: k.createdAt,
            retiredAt: k.retiredAt,
            jwk: JSON.stringify(k.jwk),
          })),
          "No signing key yet.",
        ),
      };
    },
  },
  "products prepare-key": {
    help: {
      summary: "Make a next signing key, endorsed by the current one",
      synopsis: "<slug>",
      options: [slugArgument],
      example: "shipkey products prepare-key desktop-app",
    },
    run: async (db, args, _options, context) => {
      const slug = oneArgument(args, "product slug");
      // A key sealed under another master key would leave the servers unable to sign.
      const masterKey = await cliMasterKey(db, context);
      const prepared = await prepareSigningKey(db, cliActor(), masterKey, slug);
      return {
        data: prepared,
        text: `${describe({ ...prepared })}\nPublished as the next key; apps learn it from their next signed answer. Promote it after the product's offline period.`,
      };
    },
  },
  "products promote-key": {
    help: {
      summary: "Make the next signing key the current one",
      synopsis: "<slug> [--force]",
      options: [
        slugArgument,
        ["--force", "promote before the product's offline period has passed since prepare-key"],
      ],
      example: "shipkey products promote-key desktop-app",
    },
    run: async (db, args, options) => {
      const slug = oneArgument(args, "product slug");
      const promotion = await promoteSigningKey(db, cliActor(), slug, {
        force: options.force === true,
      });
      return {
        data: promotion,
        text: `${describe({ ...promotion })}\nRunning servers sign with it within 30 seconds.`,
      };
    },
  },
  "products remove-key": {
    help: {
      summary: "Remove a next or retired signing key",
      synopsis: "<slug> --kid <kid>",
      options: [
        slugArgument,
        ["--kid <kid>", "the key's id, as products keys shows it (required)"],
      ],
      example:
        "shipkey products remove-key desktop-app --kid NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
    },
    run: async (db, args, options) => {
      const slug = oneArgument(args, "product slug");
      const removed = await removeSigningKey(db, cliActor(), slug, requiredOption(options, "kid"));
      return { data: { deleted: true, ...removed }, text: `Removed key ${removed.kid}.` };
    },
  },
  "products set-offline-period": {
    help: {
      summary: "Set how long an offline certificate lasts",
      synopsis: `<slug> ${optionSpec(settingOption("offlinePeriodSeconds"))}`,
      options: [slugArgument, optionHelp(settingOption("offlinePeriodSeconds"))],
      example: "shipkey products set-offline-period desktop-app --seconds 604800",
    },
    run: async (db, args, options) => {
      const slug = oneArgument(args, "product slug");
      const seconds = requiredSetting(options, "offlinePeriodSeconds");
      const product = await setOfflinePeriod(db, cliActor(), slug, seconds);
      return { data: product, text: describe({ ...product }) };
    },
  },
  "products set-offline-allowance": {
    help: {
      summary: "Set how many extra machines may hold an offline certificate",
      synopsis: `<slug> ${optionSpec(settingOption("offlineAllowance"))}`,
      options: [slugArgument, optionHelp(settingOption("offlineAllowance"))],
      example: "shipkey products set-offline-allowance desktop-app --machines 2",
    },
    run: async (db, args, options) => {
      const slug = oneArgument(args, "product slug");
      const machines = requiredSetting(options, "offlineAllowance");
      const product = await setOfflineAllowance(db, cliActor(), slug, machines);
      return { data: product, text: describe({ ...product }) };
    },
  },
  "products set-deactivation-limit": {
    help: {
      summary: "Limit the deactivations an app may make per license in 30 days",
      synopsis: `<slug> ${optionSpec(settingOption("maxDeactivationsPer30Days"))}`,
      options: [slugArgument, optionHelp(settingOption("maxDeactivationsPer30Days"))],
      example: "shipkey products set-deactivation-limit desktop-app --per-30-days 3",
    },
    run: async (db, args, options) => {
      const slug = oneArgument(args, "product slug");
      const limit = requiredSetting(options, "maxDeactivationsPer30Days");
      const product = await setDeactivationLimit(db, cliActor(), slug, limit);
      return { data: product, text: describe({ ...product }) };
    },
  },
  "products set-machine-lease": {
    help: {
      summary: "Free a machine's slot after this many days unseen",
      synopsis: `<slug> ${optionSpec(settingOption("machineLeaseDays"))}`,
      options: [slugArgument, optionHelp(settingOption("machineLeaseDays"))],
      example: "shipkey products set-machine-lease desktop-app --days 30",
    },
    run: async (db, args, options) => {
      const slug = oneArgument(args, "product slug");
      const days = requiredSetting(options, "machineLeaseDays");
      const product = await setMachineLease(db, cliActor(), slug, days);
      return { data: product, text: describe({ ...product }) };
    },
  },
};
