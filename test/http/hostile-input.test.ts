import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as checkoutClaim from "../../src/contracts/checkout-claim.js";
import * as integrations from "../../src/contracts/integrations.js";
import * as licenseApi from "../../src/contracts/license-api.js";
import * as releases from "../../src/contracts/releases.js";
import { limits } from "../../src/contracts/vocabulary.js";
import { contracts } from "../helpers/contracts.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/**
 * The review's hostile inputs, sent to every public route: a 16 KiB User-Agent of slashes (it
 * once backtracked quadratically in the Sparkle feed), every header and query value a public
 * route reads at its longest allowed length, and one character more. The answers must be the
 * ones a normal request gets, or a clear 4xx JSON refusal naming the field; never a 5xx.
 * (What they cost is measured by `npm run bench`, not here.)
 */

const publicContracts = contracts.filter(
  (c) => c.auth === "public" || c.url === releases.publish.url,
);

const slashes = "/".repeat(16 * 1024 - 64);
const hostileAgents = [
  slashes,
  `App/${slashes} Sparkle/2.6.0`,
  `App/${"1".repeat(16_000)}x Sparkle/`,
  ` Sparkle/`.repeat(1500),
];
const id = limits.identifier;
const longest = (c: string) => c.repeat(id);

interface Probe {
  method: "GET" | "POST";
  url: string;
  /** The contract URL it exercises. */
  route: string;
  body?: Record<string, unknown>;
  headers?: Record<string, string>;
}

describe("hostile input to every public route", () => {
  let f: Fixture;
  let licenseKey: string;
  let probes: Probe[];
  beforeAll(async () => {
    f = await createFixture("sqlite");
    licenseKey = await f.createLicense({ maxMachines: 3 });
    const published = await f.post(
      "/api/releases/publish",
      {
        productSlug: f.product.slug,
        version: "1.0.0",
        channel: "STABLE",
        releaseNotes: "## Fixes\n\n- **faster** start",
        releases: [
          { platform: "WINDOWS", arch: "X64", downloadUrl: "https://dl.example.com/a-1.0.0.exe" },
          { platform: "MACOS", arch: "ARM64", downloadUrl: "https://dl.example.com/a-1.0.0.zip" },
          {
            platform: "LINUX",
            arch: "X64",
            downloadUrl: "https://dl.example.com/a-1.0.0.AppImage",
          },
        ],
      },
      { authorization: `Bearer ${f.publishKey}` },
    );
    expect(published.statusCode).toBe(200);
    const slug = f.product.slug;
    const license = { licenseKey, machineId: "m-1", productSlug: slug };
    probes = [
      {
        method: "POST",
        route: licenseApi.activate.url,
        url: licenseApi.activate.url,
        body: license,
      },
      {
        method: "POST",
        route: licenseApi.validate.url,
        url: licenseApi.validate.url,
        body: license,
      },
      {
        method: "POST",
        route: licenseApi.checkout.url,
        url: licenseApi.checkout.url,
        body: license,
      },
      {
        method: "POST",
        route: licenseApi.deactivate.url,
        url: licenseApi.deactivate.url,
        body: { licenseKey, machineId: "never-activated" },
      },
      {
        method: "POST",
        route: releases.publish.url,
        url: releases.publish.url,
        headers: { authorization: `Bearer ${f.publishKey}` },
        body: {
          productSlug: slug,
          version: "1.0.1",
          channel: "STABLE",
          releases: [
            { platform: "WINDOWS", arch: "X64", downloadUrl: "https://dl.example.com/b.exe" },
          ],
        },
      },
      {
        method: "GET",
        route: "/api/products/:productSlug/keys",
        url: `/api/products/${slug}/keys`,
      },
      { method: "GET", route: "/healthz", url: "/healthz" },
      { method: "GET", route: "/readyz", url: "/readyz" },
      {
        method: "GET",
        route: releases.latest.url,
        url: `/api/updates/${slug}/latest?platform=WINDOWS&arch=X64&currentVersion=0.9.0`,
      },
      {
        method: "GET",
        route: releases.tauri.url,
        url: `/api/updates/${slug}/tauri/windows/x86_64/0.9.0`,
      },
      {
        method: "GET",
        route: releases.squirrelMac.url,
        url: `/api/updates/${slug}/squirrel-mac/arm64/0.9.0`,
      },
      {
        method: "GET",
        route: releases.electron.url,
        url: `/api/updates/${slug}/electron/latest.yml`,
      },
      {
        method: "GET",
        route: releases.sparkle.url,
        url: `/api/updates/${slug}/sparkle/macos/arm64/appcast.xml`,
      },
      {
        method: "GET",
        route: releases.download.url,
        url: `/api/downloads/${slug}/1.0.0/WINDOWS/X64`,
      },
      {
        method: "GET",
        route: releases.downloadNamed.url,
        url: `/api/downloads/${slug}/1.0.0/WINDOWS/X64/a-1.0.0.exe`,
      },
      {
        method: "GET",
        route: checkoutClaim.claimCheckout.url,
        url: "/api/checkout/claim?provider=stripe&session=cs_test_1",
      },
      {
        method: "POST",
        route: integrations.receiveIntegrationEvent.url,
        url: "/api/integrations/stripe/int_01JD8X3V6Q2WHM4KZR7TXN/webhook",
        body: { id: "evt_1" },
      },
    ];
  });
  afterAll(async () => {
    await f.close();
  });

  const send = (probe: Probe, headers: Record<string, string> = {}, url = probe.url) =>
    f.app.inject({
      method: probe.method,
      url,
      headers: {
        ...(probe.body === undefined ? {} : { "content-type": "application/json" }),
        ...probe.headers,
        ...headers,
      },
      ...(probe.body === undefined ? {} : { payload: JSON.stringify(probe.body) }),
    });

  /** A refusal is JSON naming its code; anything else is the route's own answer. */
  const expectClear = (answer: Awaited<ReturnType<typeof send>>, label: string) => {
    expect(answer.statusCode, label).toBeLessThan(500);
    if (answer.statusCode >= 400) {
      expect(answer.json(), label).toMatchObject({
        error: expect.any(String),
        code: expect.any(String),
      });
    }
  };

  it("the probes cover every public route", () => {
    const covered = new Set(probes.map((p) => p.route));
    expect(publicContracts.map((c) => c.url).filter((url) => !covered.has(url))).toEqual([]);
  });

  it("a 16 KiB User-Agent gets the answer a normal one gets", async () => {
    for (const probe of probes) {
      const normal = await send(probe, { "user-agent": "Desktop App/0.9.0 Sparkle/2.6.0" });
      for (const agent of hostileAgents) {
        const hostile = await send(probe, { "user-agent": agent });
        expect(hostile.statusCode, `${probe.url}`).toBe(normal.statusCode);
        expect(hostile.headers["content-type"], probe.url).toBe(normal.headers["content-type"]);
      }
    }
  });

  it("every header a public route reads, at its longest, is answered clearly", async () => {
    const headers = {
      "shipkey-machine": longest("m"),
      "if-none-match": `W/"${"x".repeat(1016)}"`.padEnd(1024, ","),
      "x-user-staging-id": "f".repeat(36),
      "shipkey-nonce": "n".repeat(128),
      "idempotency-key": "k".repeat(limits.idempotencyKey),
    };
    for (const probe of probes) {
      expectClear(await send(probe, headers), probe.url);
      expectClear(await send(probe, { authorization: `License ${longest("K")}` }), probe.url);
      expectClear(await send(probe, { authorization: `Bearer ${"k".repeat(1017)}` }), probe.url);
    }
  });

  it("every query value at its longest is answered clearly; one character more is a 400 naming it", async () => {
    const names = ["channel", "licenseKey", "machineId", "currentVersion", "platform", "arch"];
    for (const probe of probes.filter((p) => p.method === "GET")) {
      const join = probe.url.includes("?") ? "&" : "?";
      for (const name of names) {
        const at = await send(probe, {}, `${probe.url}${join}${name}=${longest("a")}`);
        expectClear(at, `${probe.url} ${name}`);
        const over = await send(probe, {}, `${probe.url}${join}${name}=${"a".repeat(id + 1)}`);
        if (probe.route === "/healthz" || probe.route === "/readyz") {
          expect(over.statusCode).toBe(200);
          continue;
        }
        expect(over.statusCode, `${probe.url} ${name}`).toBe(400);
        expect(over.json()).toMatchObject({ code: "FIELD_TOO_LONG", field: name });
      }
    }
  });

  it("the license endpoints read no query value: a long one changes none of the spec's answers", async () => {
    for (const probe of probes.filter((p) => p.url.startsWith("/api/license/"))) {
      const plain = await send(probe);
      const long = await send(probe, {}, `${probe.url}?x=${"a".repeat(4096)}`);
      expect([long.statusCode, long.json<{ code?: string }>().code], probe.url).toEqual([
        plain.statusCode,
        plain.json<{ code?: string }>().code,
      ]);
    }
  });

  it("the feeds refuse a Shipkey-Machine header longer than a machine id, naming it", async () => {
    for (const probe of probes.filter((p) => p.url.startsWith("/api/updates/"))) {
      const answer = await send(probe, { "shipkey-machine": "m".repeat(16_000) });
      expect(answer.statusCode, probe.url).toBe(400);
      expect(answer.json()).toMatchObject({ code: "FIELD_TOO_LONG", field: "shipkey-machine" });
    }
  });

  it("every body field of the license endpoints at its longest is answered clearly", async () => {
    const body = {
      licenseKey: longest("K"),
      machineId: longest("m"),
      productSlug: longest("p"),
      machineName: longest("n"),
      platform: longest("o"),
      appVersion: "1.0.0-" + "a".repeat(122),
      nonce: "n".repeat(128),
    };
    for (const probe of probes.filter((p) => p.url.startsWith("/api/license/"))) {
      expectClear(await send({ ...probe, body }), probe.url);
      const real = { ...body, licenseKey, productSlug: f.product.slug };
      expectClear(await send({ ...probe, body: real }), `${probe.url} (real key)`);
    }
  });
});
