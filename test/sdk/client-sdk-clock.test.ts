import { afterEach, describe, expect, it } from "vitest";
import { MemoryStorage, ShipkeyClient, ShipkeyError } from "../../packages/client/src/index.js";
import {
  type Behaviour,
  referenceServer as startReferenceServer,
  signingKey,
} from "../helpers/reference-signer.js";

/**
 * Offline, the SDK trusts the machine's clock only as far as the times it has already seen: a
 * clock set back more than a day before them is refused (CLOCK_SET_BACK), so holding the clock
 * behind cannot keep a certificate alive; a clock a little behind is tolerated; and a signed
 * answer's Date resets what was seen, so a clock that once ran ahead does not lock the app out.
 */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function referenceServer(behaviour: Behaviour) {
  const server = await startReferenceServer(behaviour);
  cleanups.push(server.close);
  return server;
}

const day = 86_400_000;

describe("the SDK's clock offline", () => {
  it("does not keep a one-hour certificate valid for 30 days of real time", async () => {
    const key = await signingKey();
    const server = await referenceServer({ key, offlineSeconds: 3600 });
    const activatedAt = Date.now();
    let realTime = activatedAt;
    let clockSetBackBy = 0;
    const app = new ShipkeyClient({
      server: server.url,
      productSlug: "app",
      publicKeys: { keys: [key.jwk] },
      storage: new MemoryStorage(),
      machineId: "machine-1",
      retry: { attempts: 1 },
      clock: () => new Date(realTime - clockSetBackBy),
    });
    await app.activate("KEY-1");
    await server.close(); // the user cuts the network (or revocation happened: same thing offline)
    clockSetBackBy = 365 * day; // ...and sets the machine's clock a year back, storage untouched

    // 30 days of real time later, a one-hour certificate must not be accepted any more.
    realTime = activatedAt + 30 * day;
    const result = await app.validate().then(
      (value) => value,
      (error: unknown) => error,
    );
    expect(result).toBeInstanceOf(ShipkeyError);
    expect((result as ShipkeyError).code).toBe("CLOCK_SET_BACK");
  });

  it("a clock a few hours behind what was seen is tolerated, and time does not run backwards", async () => {
    const key = await signingKey();
    const server = await referenceServer({ key, offlineSeconds: 3600 });
    let now = Date.now();
    const app = new ShipkeyClient({
      server: server.url,
      productSlug: "app",
      publicKeys: { keys: [key.jwk] },
      storage: new MemoryStorage(),
      machineId: "machine-1",
      retry: { attempts: 1 },
      clock: () => new Date(now),
    });
    await app.activate("KEY-1");
    await server.close();
    now -= 3 * 3_600_000; // a clock three hours behind (a wrong time zone)
    expect(await app.validate()).toMatchObject({ valid: true, offline: true });
    now += 6 * 3_600_000; // three hours after activation: the one-hour certificate has expired
    const expired = await app.validate().catch((e: unknown) => e);
    expect((expired as ShipkeyError).code).toBe("OFFLINE_PERIOD_EXPIRED");
  });

  it("a signed answer's Date replaces a time seen from a clock that ran ahead", async () => {
    const key = await signingKey();
    const storage = new MemoryStorage();
    let now = Date.now() + 30 * day; // the clock runs a month ahead
    const client = (server: string) =>
      new ShipkeyClient({
        server,
        productSlug: "app",
        publicKeys: { keys: [key.jwk] },
        storage,
        machineId: "machine-1",
        retry: { attempts: 1 },
        clock: () => new Date(now),
      });
    const first = await referenceServer({ key, offlineSeconds: 3600 });
    await client(first.url).activate("KEY-1");
    await first.close();
    await client(first.url)
      .validate()
      .catch(() => undefined); // an offline check records it
    now = Date.now(); // the clock is set right: a month "back"
    const second = await referenceServer({ key, offlineSeconds: 3600 });
    expect(await client(second.url).validate()).toMatchObject({ valid: true, offline: false });
    await second.close();
    expect(await client(second.url).validate()).toMatchObject({ valid: true, offline: true });
  });
});
