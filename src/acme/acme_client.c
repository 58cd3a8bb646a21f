/* The ACME protocol steps (RFC 8555 section 7) over an injected transport: a
 * signed POST takes a fresh nonce each time and is sent again on badNonce;
 * every answer is checked before it is used, and an error says which step and
 * what the CA said (its problem document's type and detail). */
#include "acme_client.h"

#include "acme_cert.h"
#include "jws.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROB "urn:ietf:params:acme:error:"

void sws_acme_resp_clear(sws_acme_resp *r) {
    free(r->body);
    memset(r, 0, sizeof(*r));
    r->retry_after = -1;
}

int sws_acme_client_init(sws_acme_client *c, const sws_acme_hooks *h, const char *directory,
                         EVP_PKEY *account_key) {
    memset(c, 0, sizeof(*c));
    c->h = *h;
    snprintf(c->directory, sizeof(c->directory), "%s", directory);
    c->account_key = account_key;
    c->poll_ms = 1000;
    c->max_polls = 60;
    c->retry_after = -1;
    char *t = sws_jwk_thumbprint(account_key);
    if (!t)
        return -ENOMEM;
    snprintf(c->thumbprint, sizeof(c->thumbprint), "%s", t);
    free(t);
    return 0;
}

/* An error answer into c->err: step, status, the problem's type and detail.
 * Returns the class the scheduler backs off by. */
static int ca_error(sws_acme_client *c, const char *step, const sws_acme_resp *r) {
    json_t *j = r->body ? json_loads(r->body, 0, NULL) : NULL;
    const char *type = json_string_value(json_object_get(j, "type"));
    const char *detail = json_string_value(json_object_get(j, "detail"));
    snprintf(c->err, sizeof(c->err), "%s: HTTP %ld%s%s%s%s", step, r->status, type ? " " : "",
             type ? (strncmp(type, PROB, strlen(PROB)) == 0 ? type + strlen(PROB) : type) : "",
             detail ? ": " : "", detail ? detail : "");
    c->retry_after = r->retry_after;
    bool rate = (type && strcmp(type, PROB "rateLimited") == 0) ||
                (r->status == 503 && r->retry_after >= 0) || r->status == 429;
    json_decref(j);
    return rate ? SWS_ACME_E_RATE : SWS_ACME_E_CA;
}

static int send_req(sws_acme_client *c, const char *step, const char *method, const char *url,
                    const char *body, sws_acme_resp *r) {
    char why[256] = "";
    sws_acme_resp_clear(r);
    int rc = c->h.send(c->h.send_ctx, method, url, body, r, why, sizeof(why));
    if (rc < 0) {
        snprintf(c->err, sizeof(c->err), "%s: %s: %s", step, url, why[0] ? why : "no answer");
        return SWS_ACME_E_NET;
    }
    if (r->nonce[0])
        snprintf(c->nonce, sizeof(c->nonce), "%s", r->nonce);
    return 0;
}

/* The body as a JSON object, or NULL with c->err set. */
static json_t *body_json(sws_acme_client *c, const char *step, const sws_acme_resp *r) {
    json_t *j = r->body ? json_loads(r->body, 0, NULL) : NULL;
    if (!json_is_object(j)) {
        json_decref(j);
        snprintf(c->err, sizeof(c->err), "%s: HTTP %ld with a body that is no JSON object", step,
                 r->status);
        return NULL;
    }
    return j;
}

static bool copy_url(char *dst, size_t cap, json_t *j, const char *key) {
    const char *s = json_string_value(json_object_get(j, key));
    if (!s || strlen(s) >= cap)
        return false;
    snprintf(dst, cap, "%s", s);
    return true;
}

int sws_acme_fetch_directory(sws_acme_client *c) {
    sws_acme_resp r = {0};
    int rc = send_req(c, "directory", "GET", c->directory, NULL, &r);
    if (rc == 0 && r.status != 200)
        rc = ca_error(c, "directory", &r);
    if (rc == 0) {
        json_t *j = body_json(c, "directory", &r);
        if (!j || !copy_url(c->new_nonce, sizeof(c->new_nonce), j, "newNonce") ||
            !copy_url(c->new_account, sizeof(c->new_account), j, "newAccount") ||
            !copy_url(c->new_order, sizeof(c->new_order), j, "newOrder")) {
            if (j)
                snprintf(c->err, sizeof(c->err),
                         "directory: newNonce, newAccount or newOrder missing");
            rc = SWS_ACME_E_CA;
        }
        json_decref(j);
    }
    sws_acme_resp_clear(&r);
    return rc;
}

static int fresh_nonce(sws_acme_client *c) {
    if (c->nonce[0])
        return 0;
    sws_acme_resp r = {0};
    int rc = send_req(c, "newNonce", "HEAD", c->new_nonce, NULL, &r);
    if (rc == 0 && !c->nonce[0])
        rc = r.status >= 400 ? ca_error(c, "newNonce", &r)
                             : (snprintf(c->err, sizeof(c->err),
                                         "newNonce: HTTP %ld without Replay-Nonce", r.status),
                                SWS_ACME_E_CA);
    sws_acme_resp_clear(&r);
    return rc;
}

static bool is_bad_nonce(const sws_acme_resp *r) {
    if (r->status != 400 || !r->body)
        return false;
    json_t *j = json_loads(r->body, 0, NULL);
    const char *type = json_string_value(json_object_get(j, "type"));
    bool bad = type && strcmp(type, PROB "badNonce") == 0;
    json_decref(j);
    return bad;
}

/* A signed POST (payload NULL: POST-as-GET). A nonce is used once: each
 * answer carries the next one; badNonce is sent again, a few times. r holds
 * the answer, whatever its status. */
static int post(sws_acme_client *c, const char *step, const char *url, const char *payload,
                sws_acme_resp *r) {
    for (int attempt = 0; attempt < 4; attempt++) {
        int rc = fresh_nonce(c);
        if (rc < 0)
            return rc;
        char *jws = sws_jws_sign(c->account_key, c->kid[0] ? c->kid : NULL, c->nonce, url, payload);
        c->nonce[0] = '\0';
        if (!jws) {
            snprintf(c->err, sizeof(c->err), "%s: cannot sign the request", step);
            return -ENOMEM;
        }
        rc = send_req(c, step, "POST", url, jws, r);
        free(jws);
        if (rc < 0)
            return rc;
        if (!is_bad_nonce(r))
            return 0;
        c->bad_nonce_retries++;
    }
    return ca_error(c, step, r);
}

int sws_acme_account(sws_acme_client *c, const char *email) {
    json_t *p = json_pack("{s:b}", "termsOfServiceAgreed", 1);
    if (email && *email) {
        char mail[320];
        snprintf(mail, sizeof(mail), "mailto:%s", email);
        json_object_set_new(p, "contact", json_pack("[s]", mail));
    }
    char *payload = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    if (!payload)
        return -ENOMEM;
    c->kid[0] = '\0'; /* newAccount is signed with the jwk */
    sws_acme_resp r = {0};
    int rc = post(c, "newAccount", c->new_account, payload, &r);
    free(payload);
    if (rc == 0 && r.status != 200 && r.status != 201)
        rc = ca_error(c, "newAccount", &r);
    if (rc == 0 && !r.location[0]) {
        snprintf(c->err, sizeof(c->err), "newAccount: HTTP %ld without Location", r.status);
        rc = SWS_ACME_E_CA;
    }
    if (rc == 0)
        snprintf(c->kid, sizeof(c->kid), "%s", r.location);
    sws_acme_resp_clear(&r);
    return rc;
}

/* POST-as-GET of url until its status leaves the pending ones; *out is the
 * last body (caller frees). */
static int poll_status(sws_acme_client *c, const char *step, const char *url, json_t **out) {
    for (int i = 0; i < c->max_polls; i++) {
        sws_acme_resp r = {0};
        int rc = post(c, step, url, NULL, &r);
        if (rc == 0 && r.status != 200)
            rc = ca_error(c, step, &r);
        json_t *j = rc == 0 ? body_json(c, step, &r) : NULL;
        if (rc == 0 && !j)
            rc = SWS_ACME_E_CA;
        long wait = r.retry_after;
        sws_acme_resp_clear(&r);
        if (rc < 0)
            return rc;
        const char *st = json_string_value(json_object_get(j, "status"));
        if (!st) {
            json_decref(j);
            snprintf(c->err, sizeof(c->err), "%s: answer without status", step);
            return SWS_ACME_E_CA;
        }
        if (strcmp(st, "pending") != 0 && strcmp(st, "processing") != 0) {
            *out = j;
            return 0;
        }
        json_decref(j);
        unsigned ms = wait > 0 && wait < 60 ? (unsigned)wait * 1000u : c->poll_ms;
        if (c->h.sleep_ms && !c->h.sleep_ms(c->h.ctx, ms)) {
            snprintf(c->err, sizeof(c->err), "%s: stopped", step);
            return SWS_ACME_E_STOP;
        }
    }
    snprintf(c->err, sizeof(c->err), "%s: still pending after %d polls", step, c->max_polls);
    return SWS_ACME_E_CA;
}

/* The error an invalid authorization's challenge carries, into c->err. */
static void challenge_error(sws_acme_client *c, const char *domain, json_t *authz) {
    json_t *ch;
    size_t i;
    json_array_foreach(json_object_get(authz, "challenges"), i, ch) {
        json_t *e = json_object_get(ch, "error");
        if (e) {
            const char *type = json_string_value(json_object_get(e, "type"));
            const char *detail = json_string_value(json_object_get(e, "detail"));
            snprintf(c->err, sizeof(c->err), "challenge for %s failed: %s%s%s", domain,
                     type ? (strncmp(type, PROB, strlen(PROB)) == 0 ? type + strlen(PROB) : type)
                          : "error",
                     detail ? ": " : "", detail ? detail : "");
            return;
        }
    }
    snprintf(c->err, sizeof(c->err), "challenge for %s failed: authorization invalid", domain);
}

static int authorize(sws_acme_client *c, const char *url) {
    sws_acme_resp r = {0};
    int rc = post(c, "authorization", url, NULL, &r);
    if (rc == 0 && r.status != 200)
        rc = ca_error(c, "authorization", &r);
    json_t *a = rc == 0 ? body_json(c, "authorization", &r) : NULL;
    sws_acme_resp_clear(&r);
    if (rc < 0)
        return rc;
    if (!a)
        return SWS_ACME_E_CA;
    const char *domain =
        json_string_value(json_object_get(json_object_get(a, "identifier"), "value"));
    const char *st = json_string_value(json_object_get(a, "status"));
    char dom[256];
    snprintf(dom, sizeof(dom), "%s", domain ? domain : "?");
    if (st && strcmp(st, "valid") == 0) {
        json_decref(a); /* authorized before (reused) */
        return 0;
    }
    const char *token = NULL, *chal_url = NULL;
    const char *want = c->h.challenge ? c->h.challenge : "http-01";
    json_t *ch;
    size_t i;
    json_array_foreach(json_object_get(a, "challenges"), i, ch) {
        const char *type = json_string_value(json_object_get(ch, "type"));
        if (type && strcmp(type, want) == 0) {
            token = json_string_value(json_object_get(ch, "token"));
            chal_url = json_string_value(json_object_get(ch, "url"));
        }
    }
    char tok[256], curl_[512];
    if (!token || !chal_url || strlen(token) >= sizeof(tok) || strlen(chal_url) >= sizeof(curl_) ||
        strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") !=
            strlen(token)) {
        json_decref(a);
        snprintf(c->err, sizeof(c->err), "authorization for %s: no usable %s challenge", dom, want);
        return SWS_ACME_E_CA;
    }
    snprintf(tok, sizeof(tok), "%s", token);
    snprintf(curl_, sizeof(curl_), "%s", chal_url);
    json_decref(a);
    char keyauth[400];
    snprintf(keyauth, sizeof(keyauth), "%s.%s", tok, c->thumbprint);
    if (c->h.publish && (rc = c->h.publish(c->h.ctx, dom, tok, keyauth)) < 0) {
        snprintf(c->err, sizeof(c->err), "challenge for %s: cannot publish its answer: %s", dom,
                 rc == -ENOSPC ? "table full" : strerror(-rc));
        return rc;
    }
    /* Tell the CA to fetch it, then wait for its verdict on the authorization. */
    rc = post(c, "challenge", curl_, "{}", &r);
    if (rc == 0 && r.status != 200)
        rc = ca_error(c, "challenge", &r);
    sws_acme_resp_clear(&r);
    json_t *done = NULL;
    if (rc == 0)
        rc = poll_status(c, "authorization", url, &done);
    if (c->h.withdraw)
        c->h.withdraw(c->h.ctx, dom, tok);
    if (rc < 0)
        return rc;
    st = json_string_value(json_object_get(done, "status"));
    if (!st || strcmp(st, "valid") != 0) {
        challenge_error(c, dom, done);
        snprintf(c->err_domain, sizeof(c->err_domain), "%s", dom);
        rc = SWS_ACME_E_CHALLENGE;
    }
    json_decref(done);
    return rc;
}

int sws_acme_issue(sws_acme_client *c, const char *const *domains, int n, EVP_PKEY *cert_key,
                   char **chain) {
    *chain = NULL;
    json_t *ids = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(ids, json_pack("{s:s, s:s}", "type", "dns", "value", domains[i]));
    json_t *p = json_pack("{s:o}", "identifiers", ids);
    char *payload = p ? json_dumps(p, JSON_COMPACT) : NULL;
    json_decref(p);
    if (!payload)
        return -ENOMEM;
    sws_acme_resp r = {0};
    int rc = post(c, "newOrder", c->new_order, payload, &r);
    free(payload);
    if (rc == 0 && r.status != 201 && r.status != 200)
        rc = ca_error(c, "newOrder", &r);
    char order_url[512];
    snprintf(order_url, sizeof(order_url), "%s", r.location);
    json_t *order = rc == 0 ? body_json(c, "newOrder", &r) : NULL;
    sws_acme_resp_clear(&r);
    if (rc < 0)
        return rc;
    if (!order)
        return SWS_ACME_E_CA;
    char finalize[512];
    json_t *authzs = json_object_get(order, "authorizations");
    if (!order_url[0] || !copy_url(finalize, sizeof(finalize), order, "finalize") ||
        !json_is_array(authzs) || json_array_size(authzs) == 0) {
        json_decref(order);
        snprintf(c->err, sizeof(c->err),
                 "newOrder: answer without Location, finalize or authorizations");
        return SWS_ACME_E_CA;
    }
    json_t *a;
    size_t i;
    json_array_foreach(authzs, i, a) {
        const char *url = json_string_value(a);
        if (!url) {
            rc = SWS_ACME_E_CA;
            snprintf(c->err, sizeof(c->err), "newOrder: an authorization that is no URL");
        } else {
            rc = authorize(c, url);
        }
        if (rc < 0)
            break;
    }
    json_decref(order);
    if (rc < 0)
        return rc;

    char *csr = sws_acme_csr(cert_key, domains, n);
    json_t *fp = csr ? json_pack("{s:s}", "csr", csr) : NULL;
    char *fpay = fp ? json_dumps(fp, JSON_COMPACT) : NULL;
    json_decref(fp);
    free(csr);
    if (!fpay) {
        snprintf(c->err, sizeof(c->err), "finalize: cannot make the CSR");
        return -ENOMEM;
    }
    rc = post(c, "finalize", finalize, fpay, &r);
    free(fpay);
    if (rc == 0 && r.status != 200)
        rc = ca_error(c, "finalize", &r);
    sws_acme_resp_clear(&r);
    json_t *done = NULL;
    if (rc == 0)
        rc = poll_status(c, "order", order_url, &done);
    if (rc < 0)
        return rc;
    const char *st = json_string_value(json_object_get(done, "status"));
    char cert_url[512];
    if (!st || strcmp(st, "valid") != 0 ||
        !copy_url(cert_url, sizeof(cert_url), done, "certificate")) {
        snprintf(c->err, sizeof(c->err), "order: status %s, no certificate", st ? st : "missing");
        json_decref(done);
        return SWS_ACME_E_CA;
    }
    json_decref(done);
    rc = post(c, "certificate", cert_url, NULL, &r);
    if (rc == 0 && r.status != 200)
        rc = ca_error(c, "certificate", &r);
    time_t na;
    if (rc == 0 && (!r.body || sws_acme_cert_info(r.body, r.len, &na, NULL, 0, NULL) < 0)) {
        snprintf(c->err, sizeof(c->err), "certificate: the download is no PEM certificate");
        rc = SWS_ACME_E_CA;
    }
    if (rc == 0) {
        *chain = r.body;
        r.body = NULL;
    }
    sws_acme_resp_clear(&r);
    return rc;
}
