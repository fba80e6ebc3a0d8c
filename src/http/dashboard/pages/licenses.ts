import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { type DB } from "../../../db/schema.js";
import * as actions from "../../../actions/licenses.js";
import { updateLicense } from "../../../contracts/licenses.js";
import { licenseKeyErrors } from "../../../domain/licenses/manage-licenses.js";
import {
  browseLicenses,
  type LicenseFilter,
  licenseSorts,
} from "../../../domain/licenses/list-licenses.js";
import { showLicense } from "../../../domain/licenses/show-license.js";
import { normalizeLicenseKey } from "../../../domain/licenses/license-key.js";
import { licenseKeyById } from "../../../domain/licenses/license-record.js";
import { licensesCsv } from "../../../domain/licenses/licenses-csv.js";
import { listProducts } from "../../../domain/products/products.js";
import { ShipkeyError } from "../../../errors.js";
import { type Form, formBody, formFailure, text } from "../form-body.js";
import { adminActor, contextOf, pageNumber, redirectDone, sendPage } from "../page-kit.js";
import { type LicenseStatus, licenseStatuses } from "../../../contracts/vocabulary.js";
import { licenseDetailView, newLicenseView } from "../views/license.js";
import {
  type LicensePage,
  licenseListView,
  type ListFilters,
  pageSize,
} from "../views/licenses.js";
import { machinesPageSize } from "../views/license-seats.js";
import { formOf } from "../views/license-settings-form.js";
import { licenseSeatPages } from "./license-seats.js";
import { licenseHistoryPages } from "./license-history.js";
import { licenseFields, settingsFrom } from "./license-settings-form.js";

const licensePath = (key: string) => `/admin/licenses/${encodeURIComponent(key)}`;

/** The licenses: the list (and its CSV), a new license, each license's page and its forms. */
export function licensePages(app: FastifyInstance, db: Kysely<DB>): void {
  app.get<{ Querystring: Form }>("/admin/licenses", async (request, reply) =>
    sendPage(reply, await listPage(db, request)),
  );

  // Every license the list's filters match, as CSV, written a page at a time.
  app.get<{ Querystring: Form }>("/admin/licenses/export.csv", async (request, reply) => {
    const filter = filterOf(filtersFrom(request.query));
    const day = new Date().toISOString().slice(0, 10);
    return reply
      .type("text/csv; charset=utf-8")
      .header("content-disposition", `attachment; filename="licenses-${day}.csv"`)
      .send(licensesCsv(db, filter));
  });

  app.get("/admin/licenses/new", async (request, reply) =>
    sendPage(reply, await newLicensePage(db, request, { maxMachines: "1" }, {})),
  );

  app.post<{ Body: Form }>("/admin/licenses", async (request, reply) => {
    const form = request.body;
    try {
      const license = await actions.createLicense(db, adminActor(request), {
        ...(await settingsFrom(form, givenKeyErrors(form))),
        productSlug: text(form, "productSlug"),
        licenseKey: text(form, "licenseKey") || undefined,
      });
      return redirectDone(request, reply, licensePath(license.licenseKey), "License created.");
    } catch (err) {
      const { status, errors } = formFailure(err, licenseFields);
      return sendPage(reply, await newLicensePage(db, request, form, errors), status);
    }
  });

  // The audit log names licenses by id (it holds no license key): its links land here.
  app.get<{ Params: { id: string } }>("/admin/licenses/by-id/:id", async (request, reply) => {
    const key = await licenseKeyById(db, request.params.id);
    return reply.redirect(licensePath(key), 302);
  });
  licenseDetailPages(app, db);
  licenseSeatPages(app, db);
  licenseHistoryPages(app, db);
}

/** One license's page and its forms: settings, status, a machine's deactivation. */
function licenseDetailPages(app: FastifyInstance, db: Kysely<DB>): void {
  app.get<{ Params: { key: string }; Querystring: Form }>(
    "/admin/licenses/:key",
    async (request, reply) => {
      const machinesPage = pageNumber(text(request.query, "machines"));
      const page = await detailPage(db, request, request.params.key, null, {}, machinesPage);
      return sendPage(reply, page);
    },
  );

  app.post<{ Params: { key: string }; Body: Form }>(
    "/admin/licenses/:key/edit",
    async (request, reply) => {
      const { key } = request.params;
      try {
        const settings = await settingsFrom(request.body);
        const license = await actions.updateLicense(db, adminActor(request), key, settings);
        return redirectDone(request, reply, licensePath(license.licenseKey), "License updated.");
      } catch (err) {
        const { status, errors } = formFailure(err, licenseFields);
        return sendPage(reply, await detailPage(db, request, key, request.body, errors), status);
      }
    },
  );

  app.post<{ Params: { key: string }; Body: Form }>(
    "/admin/licenses/:key/status",
    async (request, reply) => {
      const reading = { fields: ["status"] } as const;
      const { status } = await formBody(updateLicense.schema.body, request.body, reading);
      const actor = adminActor(request);
      const license = await actions.setLicenseStatus(db, actor, request.params.key, status);
      return redirectDone(request, reply, licensePath(license.licenseKey), statusDone[status]);
    },
  );

  app.post<{ Params: { key: string; machineId: string } }>(
    "/admin/licenses/:key/machines/:machineId/deactivate",
    async (request, reply) => {
      const { key, machineId } = request.params;
      await actions.deactivateMachineByAdmin(db, adminActor(request), key, machineId);
      return redirectDone(
        request,
        reply,
        licensePath(key),
        "Machine deactivated; its slot is free.",
      );
    },
  );
}

const statusDone: Record<LicenseStatus, string> = {
  ACTIVE: "License reinstated.",
  SUSPENDED: "License suspended.",
  REVOKED: "License revoked.",
};

/** The refusals of a license key typed in the new-license form ("" is a generated key). */
function givenKeyErrors(form: Form): ShipkeyError[] {
  const given = text(form, "licenseKey");
  return given === "" ? [] : licenseKeyErrors(normalizeLicenseKey(given));
}

async function newLicensePage(
  db: Kysely<DB>,
  request: FastifyRequest,
  form: Form,
  errors: Record<string, string>,
) {
  return newLicenseView(contextOf(request), await listProducts(db), form, errors);
}

/**
 * A license's page: its settings form (as stored, or as last sent when refused) and one numbered
 * page of its active machines.
 */
async function detailPage(
  db: Kysely<DB>,
  request: FastifyRequest,
  key: string,
  form: Form | null,
  errors: Record<string, string>,
  machinesPage = 1,
) {
  const license = await showLicense(db, key, Date.now(), {
    limit: machinesPageSize,
    offset: (machinesPage - 1) * machinesPageSize,
  });
  return licenseDetailView(contextOf(request), license, form ?? formOf(license), errors, {
    products: await listProducts(db),
    machinesPage,
  });
}

/** The list of licenses: the query's filters → one page of licenses → its view. */
async function listPage(db: Kysely<DB>, request: FastifyRequest<{ Querystring: Form }>) {
  const filters = filtersFrom(request.query);
  let page: LicensePage = { items: [], total: 0 };
  let error = "";
  try {
    page = await browseLicenses(db, filterOf(filters), {
      sort: filters.sort,
      descending: filters.dir === "desc",
      offset: (filters.page - 1) * pageSize,
    });
  } catch (err) {
    if (!(err instanceof ShipkeyError)) throw err;
    error = err.message;
  }
  const products = await listProducts(db);
  return licenseListView(contextOf(request), filters, products, page, error);
}

/** The list's filters, order and page as the query gives them. */
function filtersFrom(query: Form): ListFilters {
  const sort = licenseSorts.find((s) => s === text(query, "sort")) ?? "created";
  return {
    q: text(query, "q"),
    product: text(query, "product"),
    status: text(query, "status"),
    expired: text(query, "expired"),
    only: text(query, "only"),
    machine: text(query, "machine"),
    sort,
    dir: text(query, "dir") === "asc" ? "asc" : "desc",
    page: pageNumber(text(query, "page")),
  };
}

function filterOf(filters: ListFilters): LicenseFilter {
  const { status, expired, only } = filters;
  return {
    product: filters.product || undefined,
    status: (licenseStatuses as readonly string[]).includes(status)
      ? (status as LicenseStatus)
      : undefined,
    expired: expired === "yes" ? true : expired === "no" ? false : undefined,
    atLimit: only === "at-limit" ? true : undefined,
    expiringWithinDays: only === "expiring" ? 30 : undefined,
    machineId: filters.machine || undefined,
    q: filters.q || undefined,
    limit: pageSize,
  };
}
