import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, rename, unlink } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * Where the client keeps its state (license key, machine id, certificate). Values are strings;
 * an app may back this with an OS keychain or Electron's safeStorage.
 */
export interface ShipkeyStorage {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
}

/** State kept in memory only: for tests, and for apps that must not write to disk. */
export class MemoryStorage implements ShipkeyStorage {
  readonly #values = new Map<string, string>();

  async get(key: string): Promise<string | undefined> {
    return this.#values.get(key);
  }

  async set(key: string, value: string): Promise<void> {
    this.#values.set(key, value);
  }

  async delete(key: string): Promise<void> {
    this.#values.delete(key);
  }
}

/**
 * One JSON file (`{key: value}`), readable by its owner only (0600). Every write goes to a
 * temporary file in the same directory, is flushed, then renamed over the file, so a crash or a
 * full disk leaves the old state or the new one, never half of each. Writes of one instance are
 * serialised; a corrupt file reads as empty (the app activates again) rather than failing.
 */
export class FileStorage implements ShipkeyStorage {
  readonly #path: string;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(path: string) {
    this.#path = path;
  }

  get path(): string {
    return this.#path;
  }

  async get(key: string): Promise<string | undefined> {
    await this.#queue;
    return (await this.#read()).get(key);
  }

  set(key: string, value: string): Promise<void> {
    return this.#update((values) => {
      values.set(key, value);
    });
  }

  delete(key: string): Promise<void> {
    return this.#update((values) => {
      values.delete(key);
    });
  }

  #update(change: (values: Map<string, string>) => void): Promise<void> {
    const next = this.#queue.then(async () => {
      const values = await this.#read();
      change(values);
      await this.#write(values);
    });
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #read(): Promise<Map<string, string>> {
    let text: string;
    try {
      text = await readFile(this.#path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return new Map();
      throw error;
    }
    const values = new Map<string, string>();
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
        for (const [key, value] of Object.entries(parsed)) {
          if (typeof value === "string") values.set(key, value);
        }
      }
    } catch {
      // A corrupt file is treated as empty; the next write replaces it.
    }
    return values;
  }

  async #write(values: Map<string, string>): Promise<void> {
    await mkdir(dirname(this.#path), { recursive: true, mode: 0o700 });
    const temporary = `${this.#path}.${randomBytes(6).toString("hex")}.tmp`;
    const handle = await open(temporary, "wx", 0o600);
    try {
      await handle.writeFile(JSON.stringify(Object.fromEntries(values)));
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await rename(temporary, this.#path);
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      throw error;
    }
  }
}
