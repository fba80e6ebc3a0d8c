import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProduct, type Product } from "../../src/domain/products/products.js";
import { feedsOffering, isEdSignature } from "../../src/domain/releases/update-feed.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

/** What `sign_update` prints: the base64 of a 64-byte Ed25519 signature. */
const edSignature = Buffer.alloc(64, 7).toString("base64");
/** What Tauri's signer writes in a .sig file: the base64 of a minisign text file. */
const minisignSignature = Buffer.from(
  "untrusted comment: signature from tauri secret key\nRUQ...\ntrusted comment: x\nabc\n",
).toString("base64");

describe("which feeds offer an entry", () => {
  const entry = {
    platform: "MACOS" as const,
    downloadUrl: "https://cdn.example.com/App-1.0.0-mac.zip",
    signature: null,
    sha512: null,
  };
  it.each([
    [{}, ["Sparkle", "Squirrel.Mac", "generic"]],
    [{ downloadUrl: "https://cdn.example.com/App.dmg" }, ["Sparkle", "generic"]],
    [{ signature: minisignSignature }, ["Tauri", "Sparkle", "Squirrel.Mac", "generic"]],
    [{ sha512: "x", platform: "LINUX" as const }, ["electron-updater", "generic"]],
  ])("%j: %j", (overrides, feeds) => {
    expect(feedsOffering({ ...entry, ...overrides })).toEqual(feeds);
  });

  it("tells an EdDSA signature from a minisign one", () => {
    expect(isEdSignature(edSignature)).toBe(true);
    expect(isEdSignature(minisignSignature)).toBe(false);
    expect(isEdSignature(Buffer.alloc(63).toString("base64"))).toBe(false);
  });
});

describe.each(dialects)("publishing tells the vendor what each updater gets (%s)", (dialect) => {
  let f: Fixture;
  let tauriApp: Product;
  beforeAll(async () => {
    f = await createFixture(dialect);
    tauriApp = await createProduct(f.db, { slug: "tauri-app", name: "Tauri App" });
    // Any key: unsigned entries are never checked against it.
    await f.db
      .updateTable("products")
      .set({ tauri_public_key: "a-key" })
      .where("id", "=", tauriApp.id)
      .execute();
  });
  afterAll(async () => {
    await f.close();
  });

  const publish = (productSlug: string, version: string, releases: object[]) =>
    f.post(
      "/api/releases/publish",
      { productSlug, version, channel: "STABLE", releases },
      { authorization: `Bearer ${f.publishKey}` },
    );

  it("a Tauri product warns of an entry without a signature, and publishes it", async () => {
    const response = await publish("tauri-app", "1.0.0", [
      { platform: "MACOS", arch: "ARM64", downloadUrl: "https://cdn.example.com/App.dmg" },
    ]);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      releases: [{ platform: "MACOS", arch: "ARM64", status: "created" }],
      warnings: [
        "releases[0] (MACOS/ARM64) has no signature: the Tauri feed will not offer it " +
          "(the product has a Tauri key)",
      ],
    });
  });

  it("a product without a Tauri key answers no warnings", async () => {
    const response = await publish(f.product.slug, "1.0.0", [
      { platform: "MACOS", arch: "ARM64", downloadUrl: "https://cdn.example.com/App.dmg" },
    ]);
    expect(response.json()).not.toHaveProperty("warnings");
  });

  it("the appcast serves an EdDSA signature as sparkle:edSignature, never a minisign one", async () => {
    await publish(f.product.slug, "2.0.0", [
      {
        platform: "MACOS",
        arch: "ARM64",
        downloadUrl: "https://cdn.example.com/App-2.0.0.zip",
        signature: minisignSignature,
      },
      {
        platform: "MACOS",
        arch: "X64",
        downloadUrl: "https://cdn.example.com/App-2.0.0-x64.zip",
        signature: edSignature,
      },
    ]);
    const appcast = (arch: string) =>
      f.app.inject({ url: `/api/updates/${f.product.slug}/sparkle/macos/${arch}/appcast.xml` });
    const arm = (await appcast("arm64")).body;
    expect(arm).toContain("App-2.0.0.zip");
    expect(arm).not.toContain("sparkle:edSignature");
    expect((await appcast("x64")).body).toContain(`sparkle:edSignature="${edSignature}"`);
  });

  it("a download named .blockmap redirects to the file's blockmap, query kept", async () => {
    await publish(f.product.slug, "3.0.0", [
      {
        platform: "WINDOWS",
        arch: "X64",
        downloadUrl: "https://cdn.example.com/App%20Setup%203.0.0.exe?token=t",
      },
    ]);
    const base = `/api/downloads/${f.product.slug}/3.0.0/windows/x64`;
    const file = await f.app.inject({ url: `${base}/App%20Setup%203.0.0.exe` });
    expect(file.headers.location).toBe("https://cdn.example.com/App%20Setup%203.0.0.exe?token=t");
    const blockmap = await f.app.inject({ url: `${base}/App%20Setup%203.0.0.exe.blockmap` });
    expect(blockmap.statusCode).toBe(302);
    expect(blockmap.headers.location).toBe(
      "https://cdn.example.com/App%20Setup%203.0.0.exe.blockmap?token=t",
    );
  });
});
