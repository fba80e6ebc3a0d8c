import { randomBytes } from "node:crypto";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectPaymentProvider } from "../../src/actions/integrations.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { startSmtpReceiver, type SmtpReceiver } from "../helpers/smtp-receiver.js";

const masterKey = randomBytes(32);
const cli = { type: "cli" as const, id: null, label: "test", ip: null };
const from = "Acme Licensing <licenses@acme.example>";

describe.each(dialects)(
  "a Stripe sale, from the webhook to the customer's inbox (%s)",
  (dialect) => {
    let f: Fixture;
    let smtp: SmtpReceiver;
    beforeAll(async () => {
      smtp = await startSmtpReceiver();
      f = await createFixture(dialect, {
        masterKey,
        mail: { smtpUrl: smtp.url(), from, random: () => 0.5, timeoutMs: 5_000 },
      });
    });
    afterAll(async () => {
      await f.close();
      await smtp.close();
    });

    it("checkout.session.completed makes the plan's license and the e-mail with its key arrives", async () => {
      const { apiKey } = await adminAccess(f, "sales@example.com");
      const created = await callWithApiKey(
        f,
        apiKey,
        "POST",
        "/api/admin/products/desktop-app/plans",
        {
          slug: "team",
          name: "Team",
          edition: "team",
          maxMachines: 3,
        },
      );
      expect(created.statusCode, created.body).toBe(201);
      const planId = created.json<{ id: string }>().id;
      const integrationId = (
        await connectPaymentProvider(
          f.db,
          cli,
          masterKey,
          { product: f.product.slug, provider: "stripe", secret: "whsec_e2e" },
          "",
        )
      ).id;

      const payload = JSON.stringify({
        id: "evt_e2e_1",
        type: "checkout.session.completed",
        livemode: true,
        created: Math.floor(Date.now() / 1000),
        data: {
          object: {
            id: "cs_e2e_1",
            object: "checkout.session",
            mode: "payment",
            payment_status: "paid",
            payment_intent: "pi_e2e_1",
            metadata: { shipkey_plan: planId, shipkey_quantity: "2" },
            customer_details: { email: "grace@example.com", name: "Grace Hopper" },
          },
        },
      });
      const send = () =>
        f.app.inject({
          method: "POST",
          url: `/api/integrations/stripe/${integrationId}/webhook`,
          headers: {
            "content-type": "application/json",
            "stripe-signature": Stripe.webhooks.generateTestHeaderString({
              payload,
              secret: "whsec_e2e",
            }),
          },
          payload,
        });
      const first = await send();
      expect(first.statusCode, first.body).toBe(200);
      expect(first.json()).toEqual({ received: true, status: "processed" });
      // Stripe delivers again: a duplicate, no second license or message.
      expect((await send()).json()).toEqual({ received: true, status: "duplicate" });

      const licenses = await f.db
        .selectFrom("licenses")
        .selectAll()
        .where("external_id", "=", "cs_e2e_1")
        .execute();
      expect(licenses).toHaveLength(1);
      const [license] = licenses;
      expect(license).toMatchObject({
        plan_id: planId,
        edition: "team",
        max_machines: 6,
        customer_email: "grace@example.com",
        expires_at: null,
      });

      expect(await f.app.mail.deliverDue()).toBe(1);
      expect(smtp.received).toHaveLength(1);
      const [mail] = smtp.received;
      expect(mail?.subject).toBe("Your Desktop App license key");
      expect(mail?.to && !Array.isArray(mail.to) ? mail.to.value[0]?.address : null).toBe(
        "grace@example.com",
      );
      expect(mail?.text).toContain(license?.license_key);
      expect(mail?.text).toContain("6 machine(s)");
      expect(mail?.text).toContain("Grace Hopper");
      const [row] = await f.db.selectFrom("email_messages").selectAll().execute();
      expect(row).toMatchObject({
        kind: "license_delivered",
        state: "sent",
        license_id: license?.id,
        idempotency_key: `license_delivered:${integrationId}:cs_e2e_1`,
      });
      expect(await f.app.mail.deliverDue()).toBe(0);
    });
  },
);
