import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash, createPublicKey, randomBytes, verify } from "node:crypto";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import https from "node:https";
import net, { type AddressInfo } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { XMLParser } from "fast-xml-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { MemoryStorage, ShipkeyClient } from "../../packages/client/src/index.js";
import { type ServerProcess, startServer } from "../helpers/server-process.js";
import { runCli } from "../helpers/cli.js";

/**
 * The compiled server behind a real nginx that terminates TLS, configured with the upstream and
 * location blocks of deploy/nginx.conf. CI installs Debian's nginx and sets REQUIRE_NGINX=1;
 * elsewhere these tests are skipped when /usr/sbin/nginx is missing, saying so.
 *
 * Every connection comes from loopback, so each client binds an address of its own in
 * 127.0.0.0/8 (all of it reaches loopback on Linux) while nginx reaches Shipkey from 127.0.0.1:
 * the address Shipkey uses for a client can then be told apart from nginx's own.
 */
const nginxPath = process.env.NGINX_PATH ?? "/usr/sbin/nginx";
const haveNginx = existsSync(nginxPath);
if (!haveNginx && process.env.REQUIRE_NGINX === "1") {
  throw new Error(`REQUIRE_NGINX=1 but no nginx at ${nginxPath}`);
}
const title = haveNginx
  ? "Shipkey through nginx (TLS-terminating reverse proxy)"
  : `Shipkey through nginx: skipped, no nginx at ${nginxPath} (apt-get install nginx-light)`;

const run = promisify(execFile);
const licenseLimit = 5;

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

/** A free TCP port on 127.0.0.1 (the kernel's choice, released at once). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The text of the `<header> { … }` block in an nginx configuration, braces included. */
function blockOf(conf: string, header: string): string {
  const start = conf.indexOf(`${header} {`);
  if (start < 0) throw new Error(`deploy/nginx.conf has no "${header} {" block`);
  let depth = 0;
  for (let i = conf.indexOf("{", start); i < conf.length; i++) {
    if (conf[i] === "{") depth++;
    if (conf[i] === "}" && --depth === 0) return conf.slice(start, i + 1);
  }
  throw new Error(`the "${header}" block of deploy/nginx.conf is not closed`);
}

async function waitForNginx(nginx: ChildProcess, port: number, output: () => string) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (nginx.exitCode !== null || nginx.signalCode !== null) {
      throw new Error(`nginx exited (${nginx.exitCode ?? nginx.signalCode}):\n${output()}`);
    }
    const connected = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (connected) return;
    if (Date.now() > deadline) throw new Error(`nginx did not listen on ${port}:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!haveNginx)(title, () => {
  let dir: string;
  let ca: Buffer;
  let nginx: ChildProcess;
  let nginxOutput = "";
  let nginxPort: number;
  let server: ServerProcess;
  let databaseUrl: string;
  let origin: string;
  let licenseKey: string;
  let apiKey: string;
  const email = "owner@example.com";
  const password = "a long enough password 42";

  /** One request to nginx over HTTPS, from the loopback address `from`, on a new connection. */
  function send(
    path: string,
    {
      method = "GET",
      headers = {},
      body,
      from = "127.0.0.10",
    }: { method?: string; headers?: Record<string, string>; body?: Buffer; from?: string } = {},
  ): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const request = https.request(
        {
          host: "127.0.0.1",
          port: nginxPort,
          path,
          method,
          headers: body ? { ...headers, "content-length": String(body.length) } : headers,
          ca,
          localAddress: from,
          agent: false,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () =>
            resolve({
              status: response.statusCode ?? 0,
              headers: response.headers,
              rawHeaders: response.rawHeaders,
              body: Buffer.concat(chunks),
            }),
          );
          response.on("error", reject);
        },
      );
      request.setTimeout(60_000, () => request.destroy(new Error(`no answer to ${path}`)));
      request.on("error", reject);
      request.end(body);
    });
  }

  const postJson = (
    path: string,
    value: unknown,
    options: { headers?: Record<string, string>; from?: string } = {},
  ) =>
    send(path, {
      method: "POST",
      body: Buffer.from(JSON.stringify(value)),
      headers: { "content-type": "application/json", ...options.headers },
      from: options.from,
    });

  const json = (answer: Answer) => JSON.parse(answer.body.toString()) as Record<string, unknown>;

  async function cli(args: string[], input?: string): Promise<string> {
    const result = await runCli(databaseUrl, args, { input });
    if (result.code !== 0) throw new Error(`shipkey ${args.join(" ")}: ${result.stderr}`);
    return result.stdout;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "shipkey-tls-proxy-"));

    // A self-signed certificate for 127.0.0.1, trusted by the test's requests as their only CA.
    await run("openssl", [
      ...["req", "-x509", "-newkey", "ed25519", "-nodes", "-days", "1"],
      ...["-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")],
      ...["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
    ]);
    ca = readFileSync(join(dir, "cert.pem"));

    // Seeded with the CLI, as an operator would: a product handing out the download redirect,
    // a license, an API key for CI, and an admin.
    databaseUrl = `sqlite:${join(dir, "shipkey.db")}`;
    await cli(["products", "create", "--slug", "app", "--name", "App"]);
    await cli(["products", "update", "app", "--download-redirects", "on"]);
    licenseKey = (
      JSON.parse(
        await cli(["licenses", "create", "--product", "app", "--max-machines", "5", "--json"]),
      ) as { licenseKey: string }
    ).licenseKey;
    apiKey = (
      JSON.parse(
        await cli([
          ...["api-keys", "create", "--name", "ci", "--json"],
          ...["--scopes", "releases:write,audit:read"],
        ]),
      ) as { key: string }
    ).key;
    await cli(["admins", "create", "--email", email, "--password-stdin"], `${password}\n`);

    server = await startServer({
      DATABASE_URL: databaseUrl,
      TRUST_PROXY: "127.0.0.1",
      RATE_LIMIT_LICENSE: `${licenseLimit}/1m`,
    });
    const shipkeyPort = new URL(server.baseUrl).port;

    // deploy/nginx.conf's upstream and location blocks as they are (the upstream pointed at this
    // server), in a server block on a free port with the test's certificate, every file nginx
    // writes kept in the temp dir.
    const deployed = readFileSync("deploy/nginx.conf", "utf8").replace(/#.*$/gm, "");
    const upstream = blockOf(deployed, "upstream shipkey");
    expect(upstream).toContain("server 127.0.0.1:3000;");
    const location = blockOf(deployed, "location /");
    expect(location).toContain("proxy_pass http://shipkey;");
    // Without it nginx sends its own Date, and a signature fails whenever the second ticks
    // between Shipkey's answer and nginx's: too rare to rely on a test run to catch.
    expect(location).toContain("proxy_pass_header Date;");
    nginxPort = await freePort();
    origin = `https://127.0.0.1:${nginxPort}`;
    for (const temp of ["client_body", "proxy", "fastcgi", "uwsgi", "scgi", "logs"]) {
      mkdirSync(join(dir, temp));
    }
    const conf = `
      ${process.getuid?.() === 0 ? `user ${userInfo().username};` : ""}
      daemon off;
      worker_processes 1;
      pid ${join(dir, "nginx.pid")};
      error_log stderr warn;
      events { worker_connections 128; }
      http {
        access_log off;
        client_body_temp_path ${join(dir, "client_body")};
        proxy_temp_path ${join(dir, "proxy")};
        fastcgi_temp_path ${join(dir, "fastcgi")};
        uwsgi_temp_path ${join(dir, "uwsgi")};
        scgi_temp_path ${join(dir, "scgi")};
        ${upstream.replace("server 127.0.0.1:3000;", `server 127.0.0.1:${shipkeyPort};`)}
        server {
          listen 127.0.0.1:${nginxPort} ssl http2;
          server_name localhost;
          ssl_certificate ${join(dir, "cert.pem")};
          ssl_certificate_key ${join(dir, "key.pem")};
          ${location}
        }
      }`;
    writeFileSync(join(dir, "nginx.conf"), conf);
    nginx = spawn(nginxPath, ["-e", "stderr", "-p", dir, "-c", join(dir, "nginx.conf")], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    nginx.stdout?.on("data", (chunk: Buffer) => (nginxOutput += chunk.toString()));
    nginx.stderr?.on("data", (chunk: Buffer) => (nginxOutput += chunk.toString()));
    nginx.on("error", (error) => (nginxOutput += String(error)));
    await waitForNginx(nginx, nginxPort, () => nginxOutput);

    // CI publishes through the proxy too.
    const entries = (["WINDOWS", "MACOS", "LINUX"] as const).flatMap((platform) =>
      (["X64", "ARM64"] as const).map((arch) => ({
        platform,
        arch,
        downloadUrl: `https://cdn.example.com/app/1.1.0/App-${platform}-${arch}.zip`,
        signature: `sig-${platform}-${arch}`,
        sha512: createHash("sha512").update(`${platform}-${arch}`).digest("base64"),
        fileSize: 1234,
      })),
    );
    const published = await postJson(
      "/api/releases/publish",
      { productSlug: "app", version: "1.1.0", channel: "STABLE", releases: entries },
      { headers: { authorization: `Bearer ${apiKey}` } },
    );
    expect(published.status, published.body.toString()).toBe(200);
  });

  afterAll(async () => {
    if (nginx?.pid !== undefined && nginx.exitCode === null && nginx.signalCode === null) {
      nginx.kill("SIGTERM");
      await once(nginx, "exit");
    }
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill("SIGTERM");
      await once(server.child, "exit");
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("serves HTTPS in front of the plain-HTTP server", async () => {
    const health = await send("/healthz");
    expect(health.status, nginxOutput).toBe(200);
    expect(json(health)).toEqual({ status: "ok" });
  });

  it("rate limits count the client nginx forwards, not nginx, and not an address the client names", async () => {
    const validate = (from: string, spoofed: string) =>
      postJson(
        "/api/license/validate",
        { licenseKey, machineId: "not-activated", productSlug: "app" },
        { from, headers: { "x-forwarded-for": spoofed } },
      );
    // Each request from 127.0.0.2 names another address; nginx appends the real one.
    const spoofed = Array.from({ length: licenseLimit + 1 }, (_, i) => `203.0.113.${i + 1}`);
    const statuses = [];
    for (const address of spoofed) statuses.push((await validate("127.0.0.2", address)).status);
    // The license's answer to a machine never activated is 403; the sixth is the limit's 429.
    expect(statuses).toEqual([...Array<number>(licenseLimit).fill(403), 429]);
    // Another client of the same proxy has its own count: Shipkey did not count nginx's address.
    const other = await validate("127.0.0.3", "203.0.113.1");
    expect(other.status).toBe(403);
    expect(json(other)).toMatchObject({ valid: false });
  });

  it("signs in to the dashboard with Secure session cookies, and the audit log has the client's address", async () => {
    const spoof = { "x-forwarded-for": "198.51.100.9" };
    const form = await send("/admin/login", { from: "127.0.0.4", headers: spoof });
    expect(form.status).toBe(200);
    const csrfCookie = (form.headers["set-cookie"] ?? []).find((c) =>
      c.startsWith("shipkey_login_csrf="),
    );
    expect(csrfCookie).toMatch(/; Secure/);
    const token = /^shipkey_login_csrf=([^;]+)/.exec(csrfCookie ?? "")?.[1] ?? "";
    const signedIn = await send("/admin/login", {
      method: "POST",
      from: "127.0.0.4",
      headers: {
        ...spoof,
        "content-type": "application/x-www-form-urlencoded",
        cookie: `shipkey_login_csrf=${token}`,
      },
      body: Buffer.from(new URLSearchParams({ _csrf: token, email, password }).toString()),
    });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.location).toBe("/admin");
    const sessionCookie = (signedIn.headers["set-cookie"] ?? []).find((c) =>
      c.startsWith("shipkey_session="),
    );
    expect(sessionCookie).toMatch(/; Secure/);
    expect(sessionCookie).toMatch(/; HttpOnly/);
    const session = /^shipkey_session=([^;]+)/.exec(sessionCookie ?? "")?.[1] ?? "";

    // The session works through the proxy, and the Releases page shows https feed URLs.
    const releases = await send("/admin/releases?product=app", {
      from: "127.0.0.4",
      headers: { cookie: `shipkey_session=${session}` },
    });
    expect(releases.status).toBe(200);
    expect(releases.body.toString()).toContain(`${origin}/api/updates/app/`);

    // The sign-in is audited with the address nginx saw, not nginx's nor the one sent.
    const audit = await send("/api/admin/audit", {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(audit.status).toBe(200);
    const { items } = json(audit) as { items: Array<{ action: string; ip: string | null }> };
    const signIn = items.find((entry) => entry.action === "admin.sign_in");
    expect(signIn?.ip).toBe("127.0.0.4");

    // Straight to Shipkey over plain HTTP, from the trusted address but without the proxy's
    // X-Forwarded-Proto, the cookie is not marked Secure: it is nginx's header that counts.
    const direct = await fetch(`${server.baseUrl}/admin/login`);
    expect(String(direct.headers.get("set-cookie"))).not.toContain("Secure");
  });

  it("hands out https:// URLs in every update feed, and the download link redirects", async () => {
    const downloads = `${origin}/api/downloads/app/1.1.0`;
    const feed = async (path: string) => {
      const answer = await send(path);
      expect(answer.status, `${path}: ${answer.body.toString()}`).toBe(200);
      return answer.body.toString();
    };

    const tauri = JSON.parse(await feed("/api/updates/app/tauri/windows/x86_64/1.0.0")) as {
      url: string;
    };
    expect(tauri.url).toBe(`${downloads}/WINDOWS/X64/App-WINDOWS-X64.zip`);

    const squirrel = JSON.parse(await feed("/api/updates/app/squirrel-mac/arm64/1.0.0")) as {
      url: string;
    };
    expect(squirrel.url).toBe(`${downloads}/MACOS/ARM64/App-MACOS-ARM64.zip`);

    const yml = parseYaml(await feed("/api/updates/app/electron/latest.yml"), {
      schema: "yaml-1.1",
    }) as { path: string; files: Array<{ url: string }> };
    expect(yml.files.map((file) => file.url)).toEqual([
      `${downloads}/WINDOWS/X64/App-WINDOWS-X64.zip`,
      `${downloads}/WINDOWS/ARM64/App-WINDOWS-ARM64.zip`,
    ]);
    expect(yml.path).toMatch(new RegExp(`^${downloads}/WINDOWS/`));

    const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@" });
    const appcast = parser.parse(
      await feed("/api/updates/app/sparkle/macos/arm64/appcast.xml"),
    ) as {
      rss: { channel: { item: { enclosure: { "@url": string } } } };
    };
    expect(appcast.rss.channel.item.enclosure["@url"]).toBe(
      `${downloads}/MACOS/ARM64/App-MACOS-ARM64.zip`,
    );

    const latest = JSON.parse(
      await feed("/api/updates/app/latest?platform=LINUX&arch=ARM64&currentVersion=1.0.0"),
    ) as { url: string };
    expect(latest.url).toBe(`${downloads}/LINUX/ARM64/App-LINUX-ARM64.zip`);

    // Followed as an updater would: through the proxy, to the stored URL.
    const followed = await send(new URL(tauri.url).pathname);
    expect(followed.status).toBe(302);
    expect(followed.headers.location).toBe("https://cdn.example.com/app/1.1.0/App-WINDOWS-X64.zip");
  });

  it("signed answers verify through the proxy (signature format v2)", async () => {
    const jwks = await send("/api/products/app/keys");
    expect(jwks.status).toBe(200);
    const keys = (json(jwks) as { keys: Array<{ kid: string; x: string }> }).keys;
    const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("base64");

    for (const path of ["/api/license/activate", "/api/license/validate"]) {
      const nonce = randomBytes(16).toString("base64url");
      const sent = Buffer.from(
        JSON.stringify({ licenseKey, machineId: "machine-through-nginx", productSlug: "app" }),
      );
      const answer = await send(path, {
        method: "POST",
        from: "127.0.0.5",
        headers: { "content-type": "application/json", "shipkey-nonce": nonce },
        body: sent,
      });
      expect(answer.status, answer.body.toString()).toBe(200);
      // One Date, Shipkey's: the one it signed.
      const dates = answer.rawHeaders.filter((name, i) => i % 2 === 0 && /^date$/i.test(name));
      expect(dates).toHaveLength(1);
      const [, kid, signature] =
        /^keyid="([^"]+)", algorithm="ed25519", version="2", signature="([^"]+)"$/.exec(
          String(answer.headers["shipkey-signature"] ?? ""),
        ) ?? [];
      const jwk = keys.find((key) => key.kid === kid);
      expect(jwk).toBeDefined();
      const message = [
        "shipkey-signature: v2",
        `(request-target): post ${path}`,
        `status: ${answer.status}`,
        `date: ${String(answer.headers.date)}`,
        `nonce: ${nonce}`,
        `request-digest: sha-256=${sha256(sent)}`,
        `digest: sha-256=${sha256(answer.body)}`,
      ].join("\n");
      const publicKey = createPublicKey({
        key: { kty: "OKP", crv: "Ed25519", x: jwk?.x ?? "" },
        format: "jwk",
      });
      expect(
        verify(null, Buffer.from(message), publicKey, Buffer.from(signature ?? "", "base64")),
      ).toBe(true);
    }
  });

  it("the SDK activates and validates online through the proxy", async () => {
    const jwks = (await send("/api/products/app/keys")).body.toString();
    // The SDK's fetch over this test's HTTPS requests (its CA, its own client address).
    const viaProxy: typeof fetch = async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const answer = await send(`${url.pathname}${url.search}`, {
        method: init?.method ?? "GET",
        headers: Object.fromEntries(new Headers(init?.headers).entries()),
        body: init?.body ? Buffer.from(init.body as string | Uint8Array) : undefined,
        from: "127.0.0.6",
      });
      const headers = new Headers();
      for (const [name, value] of Object.entries(answer.headers)) {
        for (const one of [value ?? []].flat()) headers.append(name, one);
      }
      const empty = answer.status === 204 || answer.status === 304;
      return new Response(empty ? null : answer.body, { status: answer.status, headers });
    };
    const shipkey = new ShipkeyClient({
      server: origin,
      productSlug: "app",
      publicKeys: jwks,
      storage: new MemoryStorage(),
      fetch: viaProxy,
      machineId: "sdk-machine-through-nginx",
      retry: { attempts: 1 },
    });
    expect(await shipkey.activate(licenseKey)).toMatchObject({ activated: true });
    // offline: false means the online answer's signature verified.
    expect(await shipkey.validate()).toMatchObject({ valid: true, offline: false });
  });
});
