import { randomBytes } from "node:crypto";
import { ShipkeyError } from "./errors.js";
import { isObject, parseJson } from "./answers.js";
import type { ShipkeyStorage } from "./storage.js";

/** What a client keeps in storage for its product: the license and this machine's id. */
export interface State {
  licenseKey: string;
  machineId: string;
  certificate?: string;
  /** The latest time seen from a signed answer or a past offline check (ms): a clock set back
   * cannot go below it. */
  trustedTime?: number;
}

/** A product's stored state, read as this machine's only when this machine wrote it. */
export class LicenseState {
  readonly #storage: ShipkeyStorage;
  readonly #productSlug: string;
  readonly #machineId: () => Promise<string>;

  constructor(storage: ShipkeyStorage, productSlug: string, machineId: () => Promise<string>) {
    this.#storage = storage;
    this.#productSlug = productSlug;
    this.#machineId = machineId;
  }

  /** This machine's state; NOT_ACTIVATED without one, STATE_FROM_ANOTHER_MACHINE for a copy. */
  async require(): Promise<State> {
    const state = await this.read();
    if (!state) {
      throw new ShipkeyError("NOT_ACTIVATED", "No license is activated on this machine yet");
    }
    if (state.machineId !== (await this.#machineId())) {
      throw new ShipkeyError(
        "STATE_FROM_ANOTHER_MACHINE",
        "The stored license was activated on another machine (the storage was copied); " +
          "activate this machine to use the license here",
      );
    }
    return state;
  }

  /** The stored state when it was written on this machine, else undefined. */
  async own(): Promise<State | undefined> {
    const state = await this.read();
    return state && state.machineId === (await this.#machineId()) ? state : undefined;
  }

  /** The stored state, whichever machine wrote it. */
  async read(): Promise<State | undefined> {
    const state = parseJson<State>(await this.#storage.get(this.#key("state")));
    if (!isObject(state) || typeof state.licenseKey !== "string") return undefined;
    if (typeof state.machineId !== "string") return undefined;
    return state;
  }

  write(state: State): Promise<void> {
    return this.#storage.set(this.#key("state"), JSON.stringify(state));
  }

  forget(): Promise<void> {
    return this.#storage.delete(this.#key("state"));
  }

  /** A random id of this installation, made on first use and kept in storage. */
  async installationId(): Promise<string> {
    const key = this.#key("installation-id");
    let installationId = await this.#storage.get(key);
    if (!installationId) {
      installationId = randomBytes(32).toString("hex");
      await this.#storage.set(key, installationId);
    }
    return installationId;
  }

  #key(name: string): string {
    return `shipkey:${this.#productSlug}:${name}`;
  }
}
