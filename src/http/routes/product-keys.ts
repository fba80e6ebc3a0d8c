import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import type { SigningKeyRing } from "../../domain/signing/key-ring.js";
import { productJwks } from "../../domain/signing/signing-keys.js";
import { productKeys } from "../../contracts/license-api.js";
import { type App, publicRoute } from "../contract-route.js";

/** The product's public signing keys as a JWKS: current, then next, then retired ones. */
export function productKeysRoute(app: App, db: Kysely<DB>, ring: SigningKeyRing): void {
  app.get(
    productKeys.url,
    // Read by its contract (request-reader.ts).
    publicRoute(productKeys),
    async (request) => {
      // Through the ring: a product created without a key gets its first one here.
      await ring.keyFor(request.params.productSlug);
      return productJwks(db, request.params.productSlug);
    },
  );
}
