import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callWithApiKey } from "../helpers/admin-access.js";
import { type CliResult, runCli } from "../helpers/cli.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

interface Key {
  id: string;
  key: string;
  name: string;
  revokedAt: string | null;
  createdBy: { type: string; id: string | null; label: string } | null;
  alsoRevoked?: string[];
}

/**
 * `shipkey api-keys list` shows who created each key; `api-keys revoke --with-created` revokes
 * the keys below it. The CLI's runCli on the fixture's database, the app beside it to try keys.
 */
describe.each(dialects)("shipkey api-keys: creators and --with-created (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });

  const cli = (...args: string[]): Promise<CliResult> => runCli(f.url, args);

  async function json<T>(...args: string[]): Promise<T> {
    const result = await cli(...args, "--json");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    return JSON.parse(result.stdout) as T;
  }

  /** A key made with the CLI, with what it needs to create keys. */
  const cliKey = (name: string) =>
    json<Key>("api-keys", "create", "--name", name, "--scopes", "api-keys:write,products:read");

  /** A key made by `parent` on the admin API. */
  async function childOf(parent: Key, name: string): Promise<Key> {
    const response = await callWithApiKey(f, parent.key, "POST", "/api/admin/api-keys", {
      name,
      scopes: ["api-keys:write", "products:read"],
    });
    expect(response.statusCode, response.body).toBe(201);
    return response.json();
  }

  const status = async (key: Key) =>
    (await callWithApiKey(f, key.key, "GET", "/api/admin/products")).statusCode;

  it("list names the CLI, the key or nobody as each key's creator", async () => {
    const root = await cliKey("cli root");
    expect(root.createdBy).toEqual({ type: "cli", id: null, label: expect.stringMatching(/@/) });
    const child = await childOf(root, "cli child");

    const listed = await json<Key[]>("api-keys", "list");
    expect(listed.find((k) => k.id === root.id)?.createdBy).toEqual(root.createdBy);
    expect(listed.find((k) => k.id === child.id)?.createdBy).toEqual({
      type: "api_key",
      id: root.id,
      label: "cli root",
    });
    expect(listed.find((k) => k.name === "ci")?.createdBy).toBeNull();

    const human = (await cli("api-keys", "list")).stdout;
    const block = (name: string) =>
      human.split("\n\n").find((b) => b.includes(`name           ${name}`));
    expect(block("cli root")).toContain(`createdBy      cli ${root.createdBy?.label}`);
    expect(block("cli child")).toContain(`createdBy      api key cli root (${root.id})`);
    expect(block("ci")).toContain("createdBy      unknown");
  });

  it("revoke without --with-created leaves the keys it created working", async () => {
    const root = await cliKey("alone root");
    const child = await childOf(root, "alone child");
    const revoked = await json<Key>("api-keys", "revoke", root.id);
    expect(revoked.revokedAt).toMatch(/Z$/);
    expect(revoked.alsoRevoked).toEqual([]);
    expect(await status(root)).toBe(401);
    expect(await status(child)).toBe(200);
    const human = await cli("api-keys", "revoke", root.id);
    expect(human.stdout).not.toContain("alsoRevoked");
  });

  it("revoke --with-created revokes the keys it created and theirs, which then get 401", async () => {
    const root = await cliKey("tree root");
    const child = await childOf(root, "tree child");
    const grandchild = await childOf(child, "tree grandchild");
    const revoked = await json<Key>("api-keys", "revoke", root.id, "--with-created");
    expect(revoked.alsoRevoked).toEqual([child.id, grandchild.id]);
    for (const key of [root, child, grandchild]) expect(await status(key)).toBe(401);
    const entry = await f.db
      .selectFrom("audit_log")
      .select(["actor_type", "details"])
      .where("action", "=", "api_key.revoke")
      .where("target_id", "=", grandchild.id)
      .executeTakeFirstOrThrow();
    expect(entry.actor_type).toBe("cli");
    expect(JSON.parse(entry.details)).toEqual({ name: "tree grandchild", revokedWith: root.id });

    // Again: nothing left below it, and the human output says so.
    const again = await cli("api-keys", "revoke", root.id, "--with-created");
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^alsoRevoked\s+none$/m);
  });

  it("revoke --with-created on an already revoked key revokes the keys below it, listed in the human output", async () => {
    const root = await cliKey("late root");
    const child = await childOf(root, "late child");
    await json("api-keys", "revoke", root.id);
    const human = await cli("api-keys", "revoke", root.id, "--with-created");
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^alsoRevoked\\s+${child.id}$`, "m"));
    expect(await status(child)).toBe(401);
  });

  it("--with-created takes no value", async () => {
    const result = await cli("api-keys", "revoke", "key_x", "--with-created=yes");
    expect(result.code).toBe(2);
  });
});
