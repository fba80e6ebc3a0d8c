import type {
  Activation,
  ActivateAnswer,
  CheckoutAnswer,
  DeactivateAnswer,
  LatestAnswer,
  ValidateAnswer,
} from "./contract.js";
import { randomBytes } from "node:crypto";
import { type CertificateClaims, verifyCertificate } from "./certificate.js";
import { ShipkeyError } from "./errors.js";
import { type Answer, defaultRetry, type FetchFunction, type RetryOptions, send } from "./http.js";
import { hashMachineId, machineId as osMachineId, osMachineIdRequired } from "./machine-id.js";
import { type KeySource, PinnedKeys, type PublicKeys, RemoteKeys } from "./keys.js";
import { detectTamperedRuntime } from "./runtime.js";
import { checkSignature } from "./signature.js";
import type { ShipkeyStorage } from "./storage.js";

export interface ShipkeyClientOptions {
  /** The Shipkey server, e.g. `https://licenses.example.com` (https, except on loopback). */
  server: string | URL;
  productSlug: string;
  /**
   * The product's public keys, pinned in the app: its JWKS (`{keys: [...]}`), an array of JWKs,
   * one JWK, a PEM (SPKI) public key, or any of these as a JSON string. Checked at once: the
   * constructor throws a TypeError for anything that is not a set of Ed25519 public keys.
   */
  publicKeys?: PublicKeys;
  /**
   * Instead of publicKeys: fetch the JWKS from here once and keep it in storage (trust on first
   * use; it cannot protect against the machine's owner, who can edit the storage).
   */
  jwksUrl?: string | URL;
  storage: ShipkeyStorage;
  fetch?: FetchFunction;
  /** The time used for certificate expiry (tests inject one). */
  clock?: () => Date;
  /** This machine's id; by default the hashed OS machine id (machineId()). */
  machineId?: string | (() => Promise<string>);
  retry?: Partial<RetryOptions>;
  /**
   * When validate hears "Machine not activated" with a free slot (canActivate: an admin reset
   * the machines, or its lease lapsed while the app was not used), activate this machine again
   * and validate once more instead of throwing. Off by default: the app decides whether a freed
   * seat may be taken back without asking the user.
   */
  reactivate?: boolean;
  /**
   * The app's version (semver, e.g. `app.getVersion()`), sent with activate, validate and
   * checkout so that the dashboard counts machines per version. Checked at once: the constructor
   * throws a TypeError for a value that is not semver or is longer than 128 characters.
   */
  appVersion?: string;
  /**
   * activate, validate and checkout throw TAMPERED_RUNTIME when the process shows signs that
   * other code may run in it and replace these checks (detectTamperedRuntime: NODE_OPTIONS or
   * Node's options with --require, --import, --loader or --inspect, ELECTRON_RUN_AS_NODE, an open
   * inspector). Off by default. A speed bump, not a guarantee: code that runs first can hide the
   * signs; Electron's fuses close these routes (docs/client.md, "Injected code").
   */
  refuseTamperedRuntime?: boolean;
}

export type { Activation };

/** A server answer's fields by the contract's names, each still to be checked. */
type Unchecked<T> = { [K in keyof T]?: unknown };

export interface ActivateResult {
  /** true when this call activated the machine; false when it already was. */
  activated: boolean;
  message: string;
  activation: Activation;
  /** Present when the call activated the machine. */
  activeMachines?: number;
  maxMachines?: number;
}

/** The server's validate answer (its `expiresAt` is the license's expiry, null: never). */
export type OnlineValidation = ValidateAnswer & { offline: false };

export interface OfflineValidation {
  valid: true;
  offline: true;
  /** End of the offline period (the certificate's exp): validate must reach the server by then. */
  expiresAt: string;
  licenseExpiresAt: string | null;
  edition: string | null;
  editionName: string | null;
  features: string[];
  maxMachines: number;
}

export type ValidateResult = OnlineValidation | OfflineValidation;

export type DeactivateResult = Pick<DeactivateAnswer, "message" | "machineId">;

/** The certificate (the compact JWS, as stored), its expiry and its verified claims. */
export type CheckoutResult = Omit<CheckoutAnswer, "success"> & { claims: CertificateClaims };

export type UpdatePlatform = "WINDOWS" | "MACOS" | "LINUX";
export type UpdateArch = "X64" | "ARM64";

export interface CheckForUpdateOptions {
  /** WINDOWS, MACOS, LINUX or Node's win32/darwin/linux; default: this process's. */
  platform?: UpdatePlatform | NodeJS.Platform;
  /** X64, ARM64 or Node's x64/arm64; default: this process's. */
  arch?: UpdateArch | NodeJS.Architecture;
  /** The running version (semver); only newer releases are offered. */
  currentVersion: string;
  /** stable (default), beta or alpha: beta also sees stable releases, alpha sees all. */
  channel?: "stable" | "beta" | "alpha" | "STABLE" | "BETA" | "ALPHA";
}

/** The generic feed's answer. */
export type UpdateInfo = LatestAnswer;

export interface StoredLicense {
  licenseKey: string;
  machineId: string;
  /** End of the stored certificate's offline period, if one is stored. */
  certificateExpiresAt?: string;
}

interface State {
  licenseKey: string;
  machineId: string;
  certificate?: string;
  /** The latest time seen from a signed answer or a past offline check (ms): a clock set back
   * cannot go below it. */
  trustedTime?: number;
}

/**
 * How far the clock may be behind a time already seen before an offline check refuses it: wide
 * enough for a clock that is off by hours (a wrong time zone), far short of a clock set back to
 * keep a certificate alive.
 */
const clockSetBackToleranceMs = 24 * 60 * 60 * 1000;

/** Refusals after which a stored certificate must not keep the app running offline. */
const revokingCodes = new Set([
  "LICENSE_NOT_FOUND",
  "LICENSE_NOT_ACTIVE",
  "LICENSE_EXPIRED",
  "LICENSE_PRODUCT_MISMATCH",
  "MACHINE_NOT_ACTIVATED",
  "MAX_MACHINES_REACHED",
]);

/**
 * A Shipkey license client for one product. Every answer of the license endpoints must carry a
 * valid Shipkey-Signature over this request's fresh nonce; when the server cannot be reached,
 * validate() falls back to the stored certificate until its exp.
 */
export class ShipkeyClient {
  readonly productSlug: string;
  readonly #base: URL;
  readonly #storage: ShipkeyStorage;
  readonly #fetch: FetchFunction;
  readonly #clock: () => Date;
  readonly #retry: RetryOptions;
  readonly #keys: KeySource;
  readonly #machineIdOption: ShipkeyClientOptions["machineId"];
  readonly #reactivate: boolean;
  readonly #refuseTamperedRuntime: boolean;
  /** The appVersion field of license requests, or nothing when the app gave none. */
  readonly #appVersion: { appVersion?: string };
  #machineId: Promise<string> | undefined;

  constructor(options: ShipkeyClientOptions) {
    if (!options.productSlug) throw new TypeError("productSlug is required");
    if (!options.storage) throw new TypeError("storage is required");
    if (!options.publicKeys && !options.jwksUrl) {
      throw new TypeError("publicKeys (pinned, recommended) or jwksUrl is required");
    }
    if (options.publicKeys && options.jwksUrl) {
      throw new TypeError("give publicKeys (pinned, recommended) or jwksUrl, not both");
    }
    this.productSlug = options.productSlug;
    this.#base = serverUrl(options.server);
    this.#storage = options.storage;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#clock = options.clock ?? (() => new Date());
    this.#retry = { ...defaultRetry, ...options.retry };
    this.#machineIdOption = options.machineId;
    this.#reactivate = options.reactivate === true;
    this.#refuseTamperedRuntime = options.refuseTamperedRuntime === true;
    this.#appVersion =
      options.appVersion === undefined ? {} : { appVersion: appVersion(options.appVersion) };
    this.#keys = options.publicKeys
      ? new PinnedKeys(this.productSlug, this.#storage, options.publicKeys)
      : new RemoteKeys({
          productSlug: this.productSlug,
          url: new URL(options.jwksUrl ?? "", this.#base),
          fetch: this.#fetch,
          storage: this.#storage,
        });
  }

  /**
   * This machine's id as sent to the server: the option if given, else the OS machine id hashed
   * with the product slug, else (no OS id, e.g. some containers) a random installation id kept in
   * storage. Computed, never read from the stored state: a state whose machineId differs was
   * written on another machine and is not used.
   */
  machineId(): Promise<string> {
    this.#machineId ??= this.#resolveMachineId();
    return this.#machineId;
  }

  /**
   * Activates this machine on the license and remembers it (replacing any state, including one
   * copied from another machine); then fetches a certificate.
   */
  async activate(
    licenseKey: string,
    options: { machineName?: string; platform?: string } = {},
  ): Promise<ActivateResult> {
    await this.#checkRuntime();
    const machineId = await this.machineId();
    const { json, answer } = await this.#post<ActivateAnswer>("api/license/activate", {
      licenseKey,
      machineId,
      productSlug: this.productSlug,
      machineName: options.machineName,
      platform: options.platform ?? process.platform,
      ...this.#appVersion,
    });
    const activation = json.activation;
    if (
      json.success !== true ||
      typeof json.message !== "string" ||
      !isObject(activation) ||
      activation.machineId !== machineId ||
      typeof activation.activatedAt !== "string"
    ) {
      throw invalidResponse("activate");
    }
    await this.#writeState({ licenseKey, machineId, trustedTime: answerTime(answer) });
    // Best effort: without it, the first online validate fetches the certificate.
    await this.checkout().catch(() => undefined);
    return {
      activated: json.message === "Machine activated",
      message: json.message,
      activation: {
        machineId,
        machineName: stringOrNull(activation.machineName),
        activatedAt: activation.activatedAt,
      },
      ...(typeof json.activeMachines === "number" ? { activeMachines: json.activeMachines } : {}),
      ...(typeof json.maxMachines === "number" ? { maxMachines: json.maxMachines } : {}),
    };
  }

  /**
   * Asks the server; when it cannot be reached (network error, 5xx, 429) or its answer cannot be
   * verified (SIGNATURE_INVALID), answers from the stored certificate until its exp, then throws
   * OFFLINE_PERIOD_EXPIRED (without a certificate, the original error). After an online success,
   * the certificate is renewed once half its period has passed.
   */
  async validate(): Promise<ValidateResult> {
    await this.#checkRuntime();
    return this.#validate(this.#reactivate);
  }

  async #validate(mayReactivate: boolean): Promise<ValidateResult> {
    const state = await this.#requireState();
    let online: { json: Unchecked<ValidateAnswer>; answer: Answer };
    try {
      online = await this.#post<ValidateAnswer>("api/license/validate", {
        licenseKey: state.licenseKey,
        machineId: state.machineId,
        productSlug: this.productSlug,
        ...this.#appVersion,
      });
    } catch (error) {
      if (isUnreachable(error) || isUnverified(error)) {
        return this.#validateOffline(state, error);
      }
      if (mayReactivate && isFreedSeat(error)) {
        await this.activate(state.licenseKey);
        return this.#validate(false);
      }
      await this.#afterRefusal(error);
      throw error;
    }
    const { json, answer } = online;
    if (json.valid !== true || typeof json.maxMachines !== "number") {
      throw invalidResponse("validate");
    }
    // Bookkeeping: a storage failure here must not turn a valid license into an error.
    // The server's signed Date is the time to trust: it also undoes a local clock that once ran
    // ahead (which would otherwise make every later offline check look set back).
    const trustedTime = answerTime(answer) ?? state.trustedTime;
    await this.#writeState({ ...state, trustedTime }).catch(() => undefined);
    await this.#renewIfDue(state.certificate);
    return {
      valid: true,
      offline: false,
      edition: stringOrNull(json.edition),
      editionName: stringOrNull(json.editionName),
      features: stringArray(json.features),
      expiresAt: stringOrNull(json.expiresAt),
      maxMachines: json.maxMachines,
      activeMachines: typeof json.activeMachines === "number" ? json.activeMachines : 0,
    };
  }

  /** Frees this machine's slot and forgets the license and certificate. */
  async deactivate(): Promise<DeactivateResult> {
    const state = await this.#requireState();
    let json: Unchecked<DeactivateAnswer>;
    try {
      ({ json } = await this.#post<DeactivateAnswer>("api/license/deactivate", {
        licenseKey: state.licenseKey,
        machineId: state.machineId,
        productSlug: this.productSlug,
      }));
    } catch (error) {
      // The server says (signed) there is nothing to deactivate: nothing to keep either.
      if (
        error instanceof ShipkeyError &&
        error.signed &&
        (error.code === "ACTIVATION_NOT_FOUND" || error.code === "LICENSE_NOT_FOUND")
      ) {
        await this.forget();
      }
      throw error;
    }
    if (json.success !== true || json.machineId !== state.machineId) {
      throw invalidResponse("deactivate");
    }
    await this.forget();
    return {
      message: typeof json.message === "string" ? json.message : "Machine deactivated",
      machineId: state.machineId,
    };
  }

  /**
   * Fetches a new certificate for offline use and stores it. `ttlSeconds` may only shorten the
   * product's offline period.
   */
  async checkout(options: { ttlSeconds?: number } = {}): Promise<CheckoutResult> {
    await this.#checkRuntime();
    const state = await this.#requireState();
    let online: { json: Unchecked<CheckoutAnswer>; answer: Answer };
    try {
      online = await this.#post<CheckoutAnswer>("api/license/checkout", {
        licenseKey: state.licenseKey,
        machineId: state.machineId,
        productSlug: this.productSlug,
        ...(options.ttlSeconds === undefined ? {} : { ttlSeconds: options.ttlSeconds }),
        ...this.#appVersion,
      });
    } catch (error) {
      await this.#afterRefusal(error);
      throw error;
    }
    const { json, answer } = online;
    if (json.success !== true || typeof json.certificate !== "string") {
      throw invalidResponse("checkout");
    }
    const claims = await this.#verifyCertificate(json.certificate);
    const current = (await this.#readState()) ?? state;
    await this.#writeState({
      ...current,
      certificate: json.certificate,
      trustedTime: answerTime(answer) ?? current.trustedTime,
    });
    return {
      certificate: json.certificate,
      expiresAt: typeof json.expiresAt === "string" ? json.expiresAt : isoSeconds(claims.exp),
      claims,
    };
  }

  /**
   * The newest release above currentVersion from the generic feed, or null when there is none;
   * `critical` marks an update to install without waiting. This machine's id goes with the
   * request, so a version in a phased rollout is offered to it or not, the same on every check.
   * The stored license goes with the request (as `updateHeaders` gives it), for a product that
   * gives its updates only to licensed machines. A `url` that is not https (http only on
   * loopback) is refused with UNSAFE_UPDATE_URL. The feed is not signed: verify the downloaded
   * file (sha512, signature) before installing.
   */
  async checkForUpdate(options: CheckForUpdateOptions): Promise<UpdateInfo | null> {
    const url = new URL(`api/updates/${encodeURIComponent(this.productSlug)}/latest`, this.#base);
    url.searchParams.set("platform", updatePlatform(options.platform ?? process.platform));
    url.searchParams.set("arch", updateArch(options.arch ?? process.arch));
    url.searchParams.set("channel", (options.channel ?? "stable").toLowerCase());
    url.searchParams.set("currentVersion", options.currentVersion);
    const answer = await send(
      url,
      { method: "GET", headers: await this.#updateCheckHeaders() },
      { fetch: this.#fetch, retry: this.#retry },
    );
    if (answer.status === 204) return null;
    const json = parseJson<Record<string, unknown>>(answer.body);
    if (answer.status !== 200) throw failure(answer, json, false);
    if (!isObject(json) || typeof json.version !== "string" || typeof json.url !== "string") {
      throw invalidResponse("the update feed");
    }
    assertSafeDownloadUrl(json.url);
    return json as unknown as UpdateInfo;
  }

  /**
   * Resolves to the headers that show the stored license (`Authorization: License …`,
   * `Shipkey-Machine`) to Shipkey's download redirect, for a product that requires a license for
   * updates: given only for a `url` on this client's server under `/api/downloads/`, else `{}`
   * (as while nothing usable is stored), so the license never goes to another host. It returns a
   * promise: `headers: await shipkey.updateHeaders(url)`. Fetch with `redirect: "manual"` and
   * follow the `Location` without them.
   */
  async updateHeaders(url: string): Promise<Record<string, string>> {
    return this.#isDownloadRedirect(url) ? this.#licenseHeaders() : {};
  }

  /**
   * The stored license's headers, else this machine's id alone (`Shipkey-Machine`): a version in
   * a phased rollout is offered to a stable share of machines, chosen by that id.
   */
  async #updateCheckHeaders(): Promise<Record<string, string>> {
    const license = await this.#licenseHeaders();
    if (Object.keys(license).length > 0) return license;
    try {
      return { "shipkey-machine": await this.machineId() };
    } catch {
      return {}; // no machine id here: the server decides by the client's address
    }
  }

  async #licenseHeaders(): Promise<Record<string, string>> {
    const state = await this.#ownState();
    if (!state) return {};
    return { authorization: `License ${state.licenseKey}`, "shipkey-machine": state.machineId };
  }

  #isDownloadRedirect(url: string): boolean {
    let target: URL;
    try {
      target = new URL(url, this.#base);
    } catch {
      return false;
    }
    const downloads = new URL("api/downloads/", this.#base);
    return target.origin === downloads.origin && target.pathname.startsWith(downloads.pathname);
  }

  /**
   * What is stored for this product and this machine, if anything: a state written on another
   * machine (a copied storage file) reads as nothing.
   */
  async stored(): Promise<StoredLicense | undefined> {
    const state = await this.#ownState();
    if (!state) return undefined;
    const result: StoredLicense = { licenseKey: state.licenseKey, machineId: state.machineId };
    if (state.certificate) {
      const claims = await this.#verifyCertificate(state.certificate).catch(() => undefined);
      if (claims) result.certificateExpiresAt = isoSeconds(claims.exp);
    }
    return result;
  }

  /** Forgets the license and certificate locally, without asking the server. */
  async forget(): Promise<void> {
    await this.#storage.delete(this.#key("state"));
  }

  async #validateOffline(state: State, cause: unknown): Promise<OfflineValidation> {
    if (!state.certificate) throw cause;
    let claims: CertificateClaims;
    try {
      claims = await this.#verifyCertificate(state.certificate);
    } catch (error) {
      await this.#writeState({ ...state, certificate: undefined });
      throw error;
    }
    // A clock set back further than a day before a time already seen (a signed answer's Date, the
    // certificate's iat, an earlier offline check) is refused; within that, time never goes
    // below what was already seen, so a clock set back cannot reopen a period.
    const clock = this.#clock().getTime();
    const seen = Math.max(state.trustedTime ?? 0, claims.iat * 1000);
    if (clock < seen - clockSetBackToleranceMs) {
      throw new ShipkeyError(
        "CLOCK_SET_BACK",
        `The system clock (${new Date(clock).toISOString()}) is earlier than a time this app has already seen (${new Date(seen).toISOString()}): set the clock right, or go online`,
        { cause },
      );
    }
    const now = Math.max(clock, seen);
    if (now > (state.trustedTime ?? 0)) {
      await this.#writeState({ ...state, trustedTime: now }).catch(() => undefined);
    }
    if (now >= claims.exp * 1000) {
      throw new ShipkeyError(
        "OFFLINE_PERIOD_EXPIRED",
        `Offline since too long: the license certificate expired at ${isoSeconds(claims.exp)}`,
        { cause },
      );
    }
    return {
      valid: true,
      offline: true,
      expiresAt: isoSeconds(claims.exp),
      licenseExpiresAt: claims.licenseExpiresAt,
      edition: claims.edition,
      editionName: claims.editionName,
      features: claims.features,
      maxMachines: claims.maxMachines,
    };
  }

  async #renewIfDue(certificate: string | undefined): Promise<void> {
    if (certificate) {
      const claims = await this.#verifyCertificate(certificate).catch(() => undefined);
      const halfway = claims ? ((claims.iat + claims.exp) / 2) * 1000 : 0;
      if (claims && this.#clock().getTime() < halfway) return;
    }
    await this.checkout().catch(() => undefined);
  }

  /** A signed refusal ends offline use: the stored certificate is dropped. */
  async #afterRefusal(error: unknown): Promise<void> {
    if (!(error instanceof ShipkeyError) || !error.signed || !revokingCodes.has(error.code)) return;
    const state = await this.#readState();
    if (state?.certificate) await this.#writeState({ ...state, certificate: undefined });
  }

  /** Verifies a certificate for this product and the computed machine id. */
  async #verifyCertificate(certificate: string): Promise<CertificateClaims> {
    return verifyCertificate(certificate, this.#keys, {
      productSlug: this.productSlug,
      machineId: await this.machineId(),
    });
  }

  /**
   * POSTs with a fresh nonce and checks the signature: a success must be validly signed by a
   * trusted key; a failure signed under a trusted kid must verify. A failure without a signature
   * or signed by a key the app does not know (another product's) is reported with
   * `signed: false`, and only signed refusals change what is stored (#afterRefusal). The
   * answer's key endorsements are learned first: it may be signed by the key they announce.
   */
  async #post<T>(
    path: string,
    body: Record<string, unknown>,
  ): Promise<{ json: Unchecked<T>; answer: Answer }> {
    const answer = await send(
      new URL(path, this.#base),
      { method: "POST", body },
      { fetch: this.#fetch, retry: this.#retry },
    );
    const endorsements = answer.headers.get("shipkey-key-endorsements");
    if (endorsements) {
      await this.#keys.learn(endorsements.split(",").map((jws) => jws.trim()));
    }
    const signature = await checkSignature(answer, this.#keys);
    const success = answer.status >= 200 && answer.status < 300;
    if (signature === "invalid" || (success && signature !== "valid")) {
      throw new ShipkeyError("SIGNATURE_INVALID", signatureMessages[signature], {
        status: answer.status,
      });
    }
    const json = parseJson<Record<string, unknown>>(answer.body);
    if (!success) throw failure(answer, json, signature === "valid");
    if (!isObject(json)) throw invalidResponse(path);
    return { json: json as Unchecked<T>, answer };
  }

  async #resolveMachineId(): Promise<string> {
    const option = this.#machineIdOption;
    if (typeof option === "string") return option;
    if (typeof option === "function") return option();
    try {
      return await osMachineId(this.productSlug);
    } catch (error) {
      // macOS and Windows always have an id: not reading it is an error, not a reason to use one
      // kept in storage (which a copied storage file would carry to another machine).
      if (!(error instanceof ShipkeyError) || osMachineIdRequired(process.platform)) throw error;
    }
    const key = this.#key("installation-id");
    let installationId = await this.#storage.get(key);
    if (!installationId) {
      installationId = randomBytes(32).toString("hex");
      await this.#storage.set(key, installationId);
    }
    return hashMachineId(this.productSlug, `installation:${installationId}`);
  }

  /** With refuseTamperedRuntime: TAMPERED_RUNTIME when the process shows signs of injected code. */
  async #checkRuntime(): Promise<void> {
    if (!this.#refuseTamperedRuntime) return;
    const signs = await detectTamperedRuntime();
    if (signs.length === 0) return;
    throw new ShipkeyError(
      "TAMPERED_RUNTIME",
      `Other code may run inside this app (${signs.join(", ")}): start it without that to use the license`,
    );
  }

  /** This machine's state; NOT_ACTIVATED without one, STATE_FROM_ANOTHER_MACHINE for a copy. */
  async #requireState(): Promise<State> {
    const state = await this.#readState();
    if (!state) {
      throw new ShipkeyError("NOT_ACTIVATED", "No license is activated on this machine yet");
    }
    if (state.machineId !== (await this.machineId())) {
      throw new ShipkeyError(
        "STATE_FROM_ANOTHER_MACHINE",
        "The stored license was activated on another machine (the storage was copied); " +
          "activate this machine to use the license here",
      );
    }
    return state;
  }

  /** The stored state when it was written on this machine, else undefined. */
  async #ownState(): Promise<State | undefined> {
    const state = await this.#readState();
    return state && state.machineId === (await this.machineId()) ? state : undefined;
  }

  async #readState(): Promise<State | undefined> {
    const state = parseJson<State>(await this.#storage.get(this.#key("state")));
    if (!isObject(state) || typeof state.licenseKey !== "string") return undefined;
    if (typeof state.machineId !== "string") return undefined;
    return state;
  }

  #writeState(state: State): Promise<void> {
    return this.#storage.set(this.#key("state"), JSON.stringify(state));
  }

  #key(name: string): string {
    return `shipkey:${this.productSlug}:${name}`;
  }
}

const signatureMessages = {
  valid: "",
  missing: "The server's answer is not signed",
  "unknown-key": "The server's answer is signed by a key this app does not trust",
  invalid: "The server's answer does not match its signature",
} as const;

function serverUrl(server: string | URL): URL {
  const url = new URL(server);
  const loopback = ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) {
    throw new TypeError("server must be an https URL (http only for localhost)");
  }
  if (!url.pathname.endsWith("/")) url.pathname += "/";
  url.search = "";
  url.hash = "";
  return url;
}

/** An answer whose signature does not verify: it counts as no answer at all. */
function isUnverified(error: unknown): boolean {
  return error instanceof ShipkeyError && error.code === "SIGNATURE_INVALID";
}

/** The download URLs the SDK hands out: https, or http on loopback only. */
function assertSafeDownloadUrl(value: string): void {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  const loopback = url !== undefined && ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  if (url?.protocol === "https:" || (url?.protocol === "http:" && loopback)) return;
  throw new ShipkeyError(
    "UNSAFE_UPDATE_URL",
    `The update feed offers a download URL that is not https (${value.slice(0, 40)}): refused`,
  );
}

/** No answer, a 5xx or a 429: the server cannot serve now, which offline grace covers. */
function isUnreachable(error: unknown): boolean {
  if (!(error instanceof ShipkeyError)) return false;
  if (error.code === "NETWORK_ERROR") return true;
  return error.status !== undefined && (error.status >= 500 || error.status === 429);
}

function failure(answer: Answer, json: unknown, signed: boolean): ShipkeyError {
  const body = isObject(json) ? json : {};
  const code = typeof body.code === "string" ? body.code : `HTTP_${answer.status}`;
  const message =
    typeof body.error === "string" ? body.error : `The server answered ${answer.status}`;
  return new ShipkeyError(code, message, {
    status: answer.status,
    signed,
    ...(typeof body.canActivate === "boolean" ? { canActivate: body.canActivate } : {}),
  });
}

function invalidResponse(what: string): ShipkeyError {
  return new ShipkeyError("INVALID_RESPONSE", `Unexpected answer from ${what}`);
}

function parseJson<T>(value: Uint8Array | string | undefined): T | undefined {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(typeof value === "string" ? value : new TextDecoder().decode(value)) as T;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function stringOrNull(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}

function stringArray(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

function isoSeconds(seconds: number): string {
  return new Date(seconds * 1000).toISOString();
}

/** The Date of a verified answer, in ms. */
function answerTime(answer: Answer): number | undefined {
  const date = Date.parse(answer.headers.get("date") ?? "");
  return Number.isNaN(date) ? undefined : date;
}

function updatePlatform(value: string): UpdatePlatform {
  const names: Record<string, UpdatePlatform> = {
    WINDOWS: "WINDOWS",
    MACOS: "MACOS",
    LINUX: "LINUX",
    win32: "WINDOWS",
    darwin: "MACOS",
    linux: "LINUX",
  };
  const platform = Object.hasOwn(names, value) ? names[value] : undefined;
  if (!platform) throw new TypeError(`No Shipkey platform for ${value}`);
  return platform;
}

function updateArch(value: string): UpdateArch {
  const names: Record<string, UpdateArch> = {
    X64: "X64",
    ARM64: "ARM64",
    x64: "X64",
    arm64: "ARM64",
  };
  const arch = Object.hasOwn(names, value) ? names[value] : undefined;
  if (!arch) throw new TypeError(`No Shipkey arch for ${value}`);
  return arch;
}

/** A signed "Machine not activated" with a free slot: the machine may activate again. */
function isFreedSeat(error: unknown): boolean {
  return (
    error instanceof ShipkeyError &&
    error.signed === true &&
    error.code === "MACHINE_NOT_ACTIVATED" &&
    error.canActivate === true
  );
}

// Semantic Versioning 2.0.0's published regular expression; a leading "v" is allowed.
const semver =
  /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** The appVersion option, checked: the server ignores a version that is not semver. */
function appVersion(value: unknown): string {
  if (typeof value !== "string" || value.length > 128 || !semver.test(value)) {
    throw new TypeError("appVersion must be a semver version (e.g. 1.4.2), at most 128 characters");
  }
  return value;
}
