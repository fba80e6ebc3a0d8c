import type { EmailKind } from "../../contracts/vocabulary.js";
import type { EmailTemplate } from "./templates.js";

/**
 * The texts a product's messages have until the vendor writes its own (docs/email.md): plain,
 * short, and neutral where a license stops working (no blame, no guess at the reason).
 */
export const defaultTemplates: Record<EmailKind, EmailTemplate> = {
  license_delivered: {
    subject: "Your {{productName}} license key",
    body: `Hello{{#customerName}} {{customerName}}{{/customerName}},

thank you for buying {{productName}}. Your license key is:

{{licenseKey}}

To activate it, open {{productName}}, choose to enter a license key, and paste the key above. \
It can be active on {{maxMachines}} machine(s) at a time.{{#expiresAt}} It is valid until \
{{expiresAt}}.{{/expiresAt}}
{{#downloadUrl}}
Download {{productName}}: {{downloadUrl}}
{{/downloadUrl}}{{#portalUrl}}
Manage your license: {{portalUrl}}
{{/portalUrl}}
Keep this message: the key is what you need to activate {{productName}} again.

{{vendorName}}`,
  },
  payment_failed: {
    subject: "A payment for {{productName}} did not go through",
    body: `Hello{{#customerName}} {{customerName}}{{/customerName}},

a payment for your {{productName}} subscription (license {{licenseKey}}) did not go through. Your license keeps working \
for now{{#expiresAt}}, until {{expiresAt}}{{/expiresAt}}. Please check the payment method you \
use for it.
{{#portalUrl}}
Update your payment details: {{portalUrl}}
{{/portalUrl}}
{{vendorName}}`,
  },
  license_expiring: {
    subject: "Your {{productName}} license ends on {{expiresAt}}",
    body: `Hello{{#customerName}} {{customerName}}{{/customerName}},

your {{productName}} license {{licenseKey}} is valid until {{expiresAt}}. To keep \
using {{productName}} after that date, please renew it.
{{#portalUrl}}
Renew: {{portalUrl}}
{{/portalUrl}}
{{vendorName}}`,
  },
  license_suspended: {
    subject: "Your {{productName}} license is on hold",
    body: `Hello{{#customerName}} {{customerName}}{{/customerName}},

your {{productName}} license {{licenseKey}} is on hold, so {{productName}} will not \
activate or validate it for now. If you think this is a mistake, reply to this message and we \
will look into it.

{{vendorName}}`,
  },
  license_revoked: {
    subject: "Your {{productName}} license has ended",
    body: `Hello{{#customerName}} {{customerName}}{{/customerName}},

your {{productName}} license {{licenseKey}} has ended and no longer activates \
{{productName}}. If you have a question about it, reply to this message.

{{vendorName}}`,
  },
};
