import type {
  ActivateAnswer,
  CheckoutAnswer,
  DeactivateAnswer,
  ValidateAnswer,
} from "./contract.js";
import {
  answerTime,
  invalidResponse,
  isFreedSeat,
  isObject,
  isoSeconds,
  isRevoking,
  isUnreachable,
  isUnverified,
  stringArray,
  stringOrNull,
  type Unchecked,
} from "./answers.js";
import { type CertificateClaims, verifyCertificate } from "./certificate.js";
import type {
  ActivateResult,
  CheckForUpdateOptions,
  CheckoutResult,
  DeactivateResult,
  OfflineValidation,
  ShipkeyClientOptions,
  StoredLicense,
  UpdateInfo,
  ValidateResult,
} from "./client-types.js";
import { ShipkeyError } from "./errors.js";
import { type Answer, defaultRetry, send } from "./http.js";
import { clientMachineId } from "./machine-id.js";
import { PinnedKeys, RemoteKeys } from "./keys.js";
import { LicenseState, type State } from "./license-state.js";
import { offlineNow, offlineValidation } from "./offline.js";
import { refuseTamperedRuntime } from "./runtime.js";
import { appVersion, serverUrl } from "./options.js";
import { postSigned, type Transport } from "./signed-post.js";
import { isDownloadRedirect, latestUrl, updateInfo } from "./update-check.js";

/**
 * A Shipkey license client for one product. Every answer of the license endpoints must carry a
 * valid Shipkey-Signature over this request's fresh nonce; when the server cannot be reached,
 * validate() falls back to the stored certificate until its exp.
 */
export class ShipkeyClient {
  readonly productSlug: string;
  readonly #state: LicenseState;
  readonly #transport: Transport;
  readonly #clock: () => Date;
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
    const base = serverUrl(options.server);
    this.#state = new LicenseState(options.storage, this.productSlug, () => this.machineId());
    const fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#clock = options.clock ?? (() => new Date());
    const retry = { ...defaultRetry, ...options.retry };
    this.#machineIdOption = options.machineId;
    this.#reactivate = options.reactivate === true;
    this.#refuseTamperedRuntime = options.refuseTamperedRuntime === true;
    this.#appVersion =
      options.appVersion === undefined ? {} : { appVersion: appVersion(options.appVersion) };
    const keys = options.publicKeys
      ? new PinnedKeys(this.productSlug, options.storage, options.publicKeys)
      : new RemoteKeys({
          productSlug: this.productSlug,
          url: new URL(options.jwksUrl ?? "", base),
          fetch,
          storage: options.storage,
        });
    this.#transport = { base, fetch, retry, keys };
  }

  /**
   * This machine's id as sent to the server: the option if given, else the OS machine id hashed
   * with the product slug, else (no OS id, e.g. some containers) a random installation id kept in
   * storage. Computed, never read from the stored state: a state whose machineId differs was
   * written on another machine and is not used.
   */
  machineId(): Promise<string> {
    this.#machineId ??= clientMachineId(this.productSlug, this.#machineIdOption, () =>
      this.#state.installationId(),
    );
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
    await this.#state.write({ licenseKey, machineId, trustedTime: answerTime(answer) });
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
    const state = await this.#state.require();
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
    await this.#state.write({ ...state, trustedTime }).catch(() => undefined);
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
    const state = await this.#state.require();
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
    const state = await this.#state.require();
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
    const current = (await this.#state.read()) ?? state;
    await this.#state.write({
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
    const url = latestUrl(this.#transport.base, this.productSlug, options);
    const answer = await send(
      url,
      { method: "GET", headers: await this.#updateCheckHeaders() },
      { fetch: this.#transport.fetch, retry: this.#transport.retry },
    );
    return updateInfo(answer);
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
    return isDownloadRedirect(this.#transport.base, url) ? this.#licenseHeaders() : {};
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
    const state = await this.#state.own();
    if (!state) return {};
    return { authorization: `License ${state.licenseKey}`, "shipkey-machine": state.machineId };
  }

  /**
   * What is stored for this product and this machine, if anything: a state written on another
   * machine (a copied storage file) reads as nothing.
   */
  async stored(): Promise<StoredLicense | undefined> {
    const state = await this.#state.own();
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
    await this.#state.forget();
  }

  async #validateOffline(state: State, cause: unknown): Promise<OfflineValidation> {
    if (!state.certificate) throw cause;
    let claims: CertificateClaims;
    try {
      claims = await this.#verifyCertificate(state.certificate);
    } catch (error) {
      await this.#state.write({ ...state, certificate: undefined });
      throw error;
    }
    const now = offlineNow(claims, this.#clock().getTime(), state.trustedTime, cause);
    if (now > (state.trustedTime ?? 0)) {
      await this.#state.write({ ...state, trustedTime: now }).catch(() => undefined);
    }
    return offlineValidation(claims, now, cause);
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
    if (!isRevoking(error)) return;
    const state = await this.#state.read();
    if (state?.certificate) await this.#state.write({ ...state, certificate: undefined });
  }

  /** Verifies a certificate for this product and the computed machine id. */
  async #verifyCertificate(certificate: string): Promise<CertificateClaims> {
    return verifyCertificate(certificate, this.#transport.keys, {
      productSlug: this.productSlug,
      machineId: await this.machineId(),
    });
  }

  /** A license request, its answer's signature checked (signed-post.ts). */
  #post<T>(path: string, body: Record<string, unknown>) {
    return postSigned<T>(this.#transport, path, body);
  }

  /** With refuseTamperedRuntime: TAMPERED_RUNTIME when the process shows signs of injected code. */
  async #checkRuntime(): Promise<void> {
    if (this.#refuseTamperedRuntime) await refuseTamperedRuntime();
  }
}
