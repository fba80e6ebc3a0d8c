import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, publicUrlFrom } from "../../src/config.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { startServer } from "../helpers/server-process.js";
import { runCli } from "../helpers/cli.js";

describe("PUBLIC_URL", () => {
  it("takes an http(s) origin, and refuses a path, a query or credentials", () => {
    expect(publicUrlFrom(undefined)).toBeNull();
    expect(publicUrlFrom("")).toBeNull();
    expect(publicUrlFrom("https://Licenses.Example.com")).toBe("https://licenses.example.com");
    expect(publicUrlFrom("https://licenses.example.com:8443/")).toBe(
      "https://licenses.example.com:8443",
    );
    for (const bad of [
      "licenses.example.com",
      "ftp://licenses.example.com",
      "https://licenses.example.com/shipkey",
      "https://licenses.example.com/?a=1",
      "https://user:pw@licenses.example.com",
    ]) {
      expect(() => publicUrlFrom(bad), bad).toThrow(ConfigError);
    }
  });

  describe("every absolute URL is built from it, never from the request", () => {
    let f: Fixture;
    let apiKey: string;
    let cookie: string;
    beforeAll(async () => {
      f = await createFixture("sqlite", { publicUrl: "https://licenses.example.com" });
      ({ apiKey, cookie } = await adminAccess(f, "url@example.com"));
      const published = await f.post(
        "/api/releases/publish",
        {
          productSlug: f.product.slug,
          version: "1.1.0",
          channel: "STABLE",
          releases: [
            {
              platform: "WINDOWS",
              arch: "X64",
              downloadUrl: "https://cdn.example.com/a.zip",
              signature: "sig-a",
            },
            {
              platform: "MACOS",
              arch: "ARM64",
              downloadUrl: "https://cdn.example.com/b.zip",
              signature: "sig-b",
            },
          ],
        },
        { authorization: `Bearer ${f.publishKey}` },
      );
      expect(published.statusCode).toBe(200);
      const set = await callWithApiKey(
        f,
        apiKey,
        "PATCH",
        `/api/admin/products/${f.product.slug}`,
        {
          downloadRedirects: true,
        },
      );
      expect(set.statusCode).toBe(200);
    });
    afterAll(async () => {
      await f.close();
    });

    const get = (url: string) => f.app.inject({ url, headers: { host: "attacker.example:8080" } });

    it("feeds hand out download links on PUBLIC_URL, whatever the Host header says", async () => {
      const slug = f.product.slug;
      const base = `https://licenses.example.com/api/downloads/${slug}/1.1.0`;
      const tauri = await get(`/api/updates/${slug}/tauri/windows/x86_64/1.0.0`);
      expect(tauri.json().url).toBe(`${base}/WINDOWS/X64/a.zip`);
      const latest = await get(`/api/updates/${slug}/latest?platform=MACOS&arch=ARM64`);
      expect(latest.json().url).toBe(`${base}/MACOS/ARM64/b.zip`);
      const appcast = await get(`/api/updates/${slug}/sparkle/macos/arm64/appcast.xml`);
      expect(appcast.body).toContain(`url="${base}/MACOS/ARM64/b.zip"`);
      expect(appcast.body).not.toContain("attacker.example");
    });

    it("the dashboard's feed snippets use it too", async () => {
      const page = await f.app.inject({
        url: `/admin/releases?product=${f.product.slug}`,
        headers: { cookie, host: "attacker.example:8080" },
      });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain("https://licenses.example.com/api/updates/");
      expect(page.body).not.toContain("attacker.example");
    });
  });

  it("the start warns when download redirects are on and neither PUBLIC_URL nor TRUST_PROXY is set", async () => {
    const dir = mkdtempSync(join(tmpdir(), "shipkey-public-url-"));
    const url = `sqlite:${join(dir, "db")}`;
    try {
      expect(
        (await runCli(url, ["products", "create", "--slug", "app", "--name", "App"])).code,
      ).toBe(0);
      const redirects = ["products", "update", "app", "--download-redirects", "on"];
      expect((await runCli(url, redirects)).code).toBe(0);
      const outputs: string[] = [];
      const envs: Array<Record<string, string>> = [
        {},
        { PUBLIC_URL: "https://licenses.example.com" },
      ];
      for (const env of envs) {
        const server = await startServer({ DATABASE_URL: url, ...env });
        server.child.kill("SIGTERM");
        await once(server.child, "exit");
        outputs.push(server.output());
      }
      expect(outputs[0]).toContain("neither PUBLIC_URL nor TRUST_PROXY is set");
      expect(outputs[1]).not.toContain("neither PUBLIC_URL nor TRUST_PROXY is set");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
