import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/licenses.js";
import { moveLicense } from "../../../contracts/seats.js";
import { type Form, formBody } from "../form-body.js";
import { adminActor, redirectDone } from "../page-kit.js";

/**
 * The license page's seat actions: reset its machines, end an offline place, move it to another
 * product, delete it (once no machine holds a slot). A refusal (LICENSE_IN_USE,
 * EXTERNAL_ID_TAKEN) goes back to the license page with its message as a notice (failure-page.ts).
 */
export function licenseSeatPages(app: FastifyInstance, db: Kysely<DB>): void {
  const back = (request: FastifyRequest, reply: FastifyReply, key: string, done: string) =>
    redirectDone(request, reply, `/admin/licenses/${encodeURIComponent(key)}`, done);
  app.post<{ Params: { key: string } }>(
    "/admin/licenses/:key/reset-machines",
    async (request, reply) => {
      await actions.resetMachines(db, adminActor(request), request.params.key);
      const done = "Every machine deactivated; the slots are free.";
      return back(request, reply, request.params.key, done);
    },
  );
  app.post<{ Params: { key: string; machineId: string } }>(
    "/admin/licenses/:key/offline-places/:machineId/end",
    async (request, reply) => {
      const { key, machineId } = request.params;
      await actions.endOfflinePlace(db, adminActor(request), key, machineId);
      return back(request, reply, key, "Offline place ended; the machine no longer counts.");
    },
  );
  app.post<{ Params: { key: string }; Body: Form }>(
    "/admin/licenses/:key/move",
    async (request, reply) => {
      const { productSlug } = await formBody(moveLicense.schema.body, request.body);
      await actions.moveLicense(db, adminActor(request), request.params.key, productSlug);
      return back(request, reply, request.params.key, "License moved.");
    },
  );
  app.post<{ Params: { key: string } }>("/admin/licenses/:key/delete", async (request, reply) => {
    await actions.deleteLicense(db, adminActor(request), request.params.key);
    return reply.redirect("/admin/licenses", 303);
  });
}
