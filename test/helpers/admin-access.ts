import { createAdmin, createSession } from "../../src/domain/admins/admins.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import type { Fixture } from "./fixture.js";
import { apiKeyScopes } from "../../src/contracts/vocabulary.js";

/** Both ways in to the admin side: an API key with every scope, and a dashboard session. */
export async function adminAccess(
  f: Fixture,
  email: string,
): Promise<{ apiKey: string; cookie: string; csrf: string }> {
  const apiKey = (await createApiKey(f.db, { name: "all", scopes: [...apiKeyScopes] })).key;
  const account = await createAdmin(f.db, { email, password: "a long enough password" });
  const session = await createSession(f.db, account.id);
  return { apiKey, cookie: `shipkey_session=${session.token}`, csrf: session.csrfToken };
}

/** An admin API request with `Authorization: Bearer <apiKey>`, and a JSON body when one is given. */
export function callWithApiKey(
  f: Fixture,
  apiKey: string,
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE",
  url: string,
  body?: unknown,
) {
  return f.app.inject({
    method,
    url,
    headers: {
      authorization: `Bearer ${apiKey}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}
