import { type AddressInfo, connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const licenseRoutes = [
  ["/api/license/activate", "success"],
  ["/api/license/validate", "valid"],
  ["/api/license/deactivate", "success"],
] as const;

describe.each(dialects)("hostile and malformed requests never get a 5xx (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  const raw = (url: string, payload: string, contentType?: string) =>
    f.app.inject({
      method: "POST",
      url,
      headers: contentType === undefined ? {} : { "content-type": contentType },
      payload,
    });

  describe.each(licenseRoutes)("%s", (url, flag) => {
    it.each([
      ["malformed JSON", "{licenseKey:", "application/json", 400, "INVALID_JSON"],
      ["a JSON array", "[1,2]", "application/json", 400, "BODY_NOT_OBJECT"],
      ["a JSON string", '"hello"', "application/json", 400, "BODY_NOT_OBJECT"],
      ["JSON null", "null", "application/json", 400, "BODY_NOT_OBJECT"],
      ["an empty body", "", "application/json", 400, "BODY_NOT_OBJECT"],
      [
        "__proto__ pollution",
        '{"__proto__":{"admin":true}}',
        "application/json",
        400,
        "INVALID_JSON",
      ],
      [
        "a form body",
        "licenseKey=a",
        "application/x-www-form-urlencoded",
        415,
        "UNSUPPORTED_MEDIA_TYPE",
      ],
      ["text/plain", "{}", "text/plain", 415, "UNSUPPORTED_MEDIA_TYPE"],
      ["no Content-Type", "", undefined, 415, "UNSUPPORTED_MEDIA_TYPE"],
    ])("%s gets a JSON %s", async (_label, payload, contentType, status, code) => {
      const response = await raw(url, payload, contentType);
      expect(response.statusCode).toBe(status);
      expect(response.headers["content-type"]).toMatch(/^application\/json/);
      expect(response.json()).toMatchObject({ code, [flag]: false });
      expect(typeof response.json().error).toBe("string");
    });

    it("a JSON body with charset is accepted", async () => {
      const response = await raw(url, "{}", "application/json; charset=utf-8");
      expect(response.json().code).toBe("MISSING_REQUIRED_FIELDS");
    });

    it("a body over 64 KiB is 413", async () => {
      const body = JSON.stringify({
        licenseKey: "k".repeat(70 * 1024),
        machineId: "m",
        productSlug: "p",
      });
      const response = await raw(url, body, "application/json");
      expect(response.statusCode).toBe(413);
      expect(response.json()).toEqual({
        error: "Request body exceeds 65536 bytes",
        code: "PAYLOAD_TOO_LARGE",
        [flag]: false,
      });
    });

    it("deeply nested JSON inside a field is handled without a 5xx", async () => {
      const nested = `${"[".repeat(5000)}${"]".repeat(5000)}`;
      const response = await raw(
        url,
        `{"licenseKey":${nested},"machineId":"m","productSlug":"p"}`,
        "application/json",
      );
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ code: "INVALID_FIELD_TYPE", [flag]: false });
    });

    it("a NUL character in a field is a 400 on every database", async () => {
      const response = await raw(
        url,
        JSON.stringify({ licenseKey: "KEY\u0000X", machineId: "m", productSlug: "p" }),
        "application/json",
      );
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: "licenseKey must not contain NUL characters",
        code: "INVALID_FIELD_VALUE",
        [flag]: false,
        field: "licenseKey",
      });
    });
  });

  it("publish takes bodies up to 1 MiB and answers 413 beyond", async () => {
    const notes = "n".repeat(1024 * 1024);
    const response = await f.post(
      "/api/releases/publish",
      { releaseNotes: notes },
      { authorization: `Bearer ${f.publishKey}` },
    );
    expect(response.statusCode).toBe(413);
    expect(response.json()).toEqual({
      error: "Request body exceeds 1048576 bytes",
      code: "PAYLOAD_TOO_LARGE",
    });
    const fits = await f.post(
      "/api/releases/publish",
      { releaseNotes: "n".repeat(900 * 1024) },
      { authorization: `Bearer ${f.publishKey}` },
    );
    expect(fits.statusCode).toBe(400);
    expect(fits.json().code).toBe("MISSING_REQUIRED_FIELDS");
  });

  it("a NUL character in publish's productSlug, releaseNotes or signature is a 400", async () => {
    const base = {
      productSlug: f.product.slug,
      version: "1.0.0",
      channel: "STABLE",
      releases: [{ platform: "LINUX", arch: "X64", downloadUrl: "https://x.example.com/a" }],
    };
    const auth = { authorization: `Bearer ${f.publishKey}` };
    for (const [field, body, path] of [
      ["productSlug", { ...base, productSlug: "a\u0000" }, "productSlug"],
      ["releaseNotes", { ...base, releaseNotes: "notes\u0000" }, "releaseNotes"],
      [
        "signature",
        { ...base, releases: [{ ...base.releases[0], signature: "s\u0000" }] },
        "releases[0].signature",
      ],
    ] as const) {
      const response = await f.post("/api/releases/publish", body, auth);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: `${field} must not contain NUL characters`,
        code: "INVALID_FIELD_VALUE",
        field: path,
      });
    }
  });

  it("a POST without Content-Type to an unknown route is 404, not 415", async () => {
    const response = await f.app.inject({ method: "POST", url: "/nope" });
    expect(response.statusCode).toBe(404);
    expect(response.json().code).toBe("ROUTE_NOT_FOUND");
  });

  it("an unknown route is a JSON 404", async () => {
    const response = await f.app.inject({ method: "GET", url: "/api/nothing?x=1" });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({
      error: "No route for GET /api/nothing",
      code: "ROUTE_NOT_FOUND",
    });
  });

  it("a wrong method on a known path is a JSON 404", async () => {
    const response = await f.app.inject({ method: "GET", url: "/api/license/activate" });
    expect(response.statusCode).toBe(404);
    expect(response.headers["content-type"]).toMatch(/^application\/json/);
  });

  it("GET /healthz and GET /readyz answer JSON", async () => {
    const health = await f.app.inject({ method: "GET", url: "/healthz" });
    const ready = await f.app.inject({ method: "GET", url: "/readyz" });
    expect(health.json()).toEqual({ status: "ok" });
    expect(ready.json()).toEqual({ status: "ready" });
  });
});

describe("over a real socket", () => {
  let f: Fixture;
  let base: string;
  beforeAll(async () => {
    f = await createFixture("sqlite");
    await f.app.listen({ port: 0, host: "127.0.0.1" });
    base = `http://127.0.0.1:${(f.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await f.close();
  });

  it("a client uploading a 5 MB body to a license endpoint reads the 413 answer (no EPIPE)", async () => {
    const response = await fetch(`${base}/api/license/activate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "a".repeat(5_000_000),
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ code: "PAYLOAD_TOO_LARGE", success: false });
  });

  it("a client uploading 20 MB to publish reads the 413 answer", async () => {
    const response = await fetch(`${base}/api/releases/publish`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${f.publishKey}` },
      body: "a".repeat(20_000_000),
    });
    expect(response.status).toBe(413);
  });

  it("a URL with broken percent-encoding gets a JSON 400", async () => {
    const response = await fetch(`${base}/api/license/%zz`);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: "Malformed request URL", code: "BAD_REQUEST" });
  });

  async function rawHttp(request: string): Promise<string> {
    const socket = connect(Number(new URL(base).port), "127.0.0.1");
    socket.write(request);
    let answer = "";
    for await (const chunk of socket) answer += chunk;
    return answer;
  }

  it("malformed HTTP (Content-Length with Transfer-Encoding) gets a JSON 400", async () => {
    const answer = await rawHttp(
      "POST /api/license/validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain(
      "content-type: application/json".replace("content-type", "Content-Type"),
    );
    expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toEqual({
      error: "Malformed HTTP request",
      code: "BAD_REQUEST",
    });
  });

  it("clients that hang up half-way through their body are not a database fault: /readyz stays ready", async () => {
    for (let i = 0; i < 5; i++) {
      const socket = connect(Number(new URL(base).port), "127.0.0.1");
      socket.write(
        "POST /api/license/validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
          'Content-Length: 100\r\n\r\n{"licenseKey":',
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
      socket.destroy();
    }
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
  });

  it("two Authorization headers are ambiguous: 401 even if one key is valid", async () => {
    const answer = await rawHttp(
      "POST /api/releases/publish HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
        `Authorization: Bearer ${f.publishKey}\r\nAuthorization: Bearer nope\r\n` +
        "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
    );
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
  });

  it("headers over the size limit get a JSON 431", async () => {
    const answer = await rawHttp(
      `POST /api/releases/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${"k".repeat(20_000)}\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toEqual({
      error: "Request headers are too large",
      code: "HEADERS_TOO_LARGE",
    });
  });

  it("readyz is 503 with a JSON error once the database is gone", async () => {
    const { openTestDatabase } = await import("../helpers/database.js");
    const { buildApp } = await import("../../src/app.js");
    const { database, testDatabase } = await openTestDatabase("sqlite");
    const app = await buildApp({ database });
    await database.close();
    const response = await app.inject({ method: "GET", url: "/readyz" });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({
      error: "Service unavailable",
      code: "DATABASE_UNAVAILABLE",
    });
    await app.close();
    await testDatabase.drop();
  });
});
