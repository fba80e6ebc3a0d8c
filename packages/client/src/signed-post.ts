import {
  failure,
  invalidResponse,
  isObject,
  parseJson,
  signatureMessages,
  type Unchecked,
} from "./answers.js";
import { ShipkeyError } from "./errors.js";
import { type Answer, type FetchFunction, type RetryOptions, send } from "./http.js";
import type { KeySource } from "./keys.js";
import { checkSignature } from "./signature.js";

/** What a license request is sent with. */
export interface Transport {
  base: URL;
  fetch: FetchFunction;
  retry: RetryOptions;
  keys: KeySource;
}

/**
 * POSTs with a fresh nonce and checks the signature: a success must be validly signed by a
 * trusted key; a failure signed under a trusted kid must verify. A failure without a signature
 * or signed by a key the app does not know (another product's) is reported with
 * `signed: false`, and only signed refusals change what is stored (the client's #afterRefusal).
 * The answer's key endorsements are learned first: it may be signed by the key they announce.
 */
export async function postSigned<T>(
  transport: Transport,
  path: string,
  body: Record<string, unknown>,
): Promise<{ json: Unchecked<T>; answer: Answer }> {
  const { keys } = transport;
  const answer = await send(
    new URL(path, transport.base),
    { method: "POST", body },
    { fetch: transport.fetch, retry: transport.retry },
  );
  const endorsements = answer.headers.get("shipkey-key-endorsements");
  if (endorsements) {
    await keys.learn(endorsements.split(",").map((jws) => jws.trim()));
  }
  const signature = await checkSignature(answer, keys);
  const success = answer.status >= 200 && answer.status < 300;
  if (signature === "invalid" || (success && signature !== "valid")) {
    throw new ShipkeyError("SIGNATURE_INVALID", signatureMessages[signature], {
      status: answer.status,
    });
  }
  const json = parseJson<Record<string, unknown>>(answer.body);
  if (!success) throw failure(answer, json, signature === "valid");
  if (!isObject(json)) throw invalidResponse(path);
  return { json: json as Unchecked<T>, answer };
}
