#include "transfer/afp/afp_uam.h"

#include <fmt/format.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/text.h"
#include "transfer/afp/afp_codec.h"

namespace cp::transfer::afp {
namespace {

constexpr unsigned char kDhcast128PrimeBytes[16] = {0xBA, 0x28, 0x73, 0xDF, 0xB0, 0x60, 0x57, 0xD4,
                                                    0x3F, 0x20, 0x24, 0x74, 0x4C, 0xEE, 0xE7, 0x5B};

// A std::string that is wiped when it goes (passwords, keys).
struct Secret {
  std::string s;
  ~Secret() { OPENSSL_cleanse(s.data(), s.size()); }
};

std::string zero_padded(std::string_view s, size_t n) {
  std::string out(s);
  out.resize(n, '\0');
  return out;
}

void check_password(std::string_view uam, const std::string& password, size_t max) {
  if (password.size() > max) {
    throw Error(ErrorKind::kConfig,
                fmt::format("the password is {} bytes long; the AFP UAM '{}' carries at most {}",
                            password.size(), uam, max),
                uam == kUamCleartext ? "use a stronger UAM (DHX2), which carries 255 bytes"
                                     : "use DHX2, which carries up to 255 bytes");
  }
}

using BnPtr = std::unique_ptr<BIGNUM, void (*)(BIGNUM*)>;
BnPtr bn(std::string_view be) {
  BIGNUM* b = BN_bin2bn(reinterpret_cast<const unsigned char*>(be.data()),
                        static_cast<int>(be.size()), nullptr);
  CP_CHECK(b != nullptr);
  return BnPtr(b, BN_clear_free);
}

// 1 < y < p - 1: rejects public keys that would force a trivial secret.
void check_public_key(Reader& r, std::string_view y, std::string_view p, const char* field) {
  const std::string one(1, '\1');
  std::string p_minus_1(p);
  // p is odd (checked by callers), so p - 1 only clears the last bit.
  p_minus_1.back() = static_cast<char>(p_minus_1.back() & 0xfe);
  if (crypto::compare(y, one) <= 0 || crypto::compare(y, p_minus_1) >= 0) {
    r.fail(field, "is not between 1 and p - 1");
  }
}

class GuestUam : public Uam {
 public:
  std::string name() const override { return std::string(kUamGuest); }
  std::string login(std::string_view version) override {
    return encode_login(version, kUamGuest, nullptr, {});
  }
  std::string next(std::string_view) override {
    throw Error(ErrorKind::kPeer, "the AFP server asked to continue a guest login",
                "guest logins take one step; check the server's UAM configuration");
  }
};

class CleartextUam : public Uam {
 public:
  CleartextUam(const std::string& user, const std::string& password) : user_(user) {
    check_password(kUamCleartext, password, kCleartextPasswordMax);
    password_.s = zero_padded(password, kCleartextPasswordMax);
  }
  std::string name() const override { return std::string(kUamCleartext); }
  std::string login(std::string_view version) override {
    return encode_login(version, kUamCleartext, &user_, password_.s);
  }
  std::string next(std::string_view) override {
    throw Error(ErrorKind::kPeer, "the AFP server asked to continue a cleartext login",
                "Cleartxt Passwrd logins take one step; check the server's UAM configuration");
  }

 private:
  std::string user_;
  Secret password_;
};

class Dhcast128Uam : public Uam {
 public:
  Dhcast128Uam(const std::string& user, const std::string& password, RandomFn random)
      : user_(user), random_(std::move(random)) {
    check_password(kUamDhcast128, password, kDhcast128PasswordMax);
    password_.s = zero_padded(password, kDhcast128PasswordMax);
  }
  std::string name() const override { return std::string(kUamDhcast128); }
  std::string login(std::string_view version) override {
    ra_.s = random_(32);
    const std::string g(1, static_cast<char>(kDhcast128Generator));
    const std::string ma = crypto::mod_exp(g, ra_.s, dhcast128_prime(), 16);
    return encode_login(version, kUamDhcast128, &user_, ma);
  }
  std::string next(std::string_view reply) override {
    Reader r(reply, "DHCAST128 FPLogin reply");
    if (step_++ != 0) r.fail("step", "is past the last one (DHCAST128 takes one FPLoginCont)");
    if (reply.size() != 50) r.fail("length", fmt::format("is {}; expected 50", reply.size()));
    const std::string_view id = r.bytes(2, "session id");
    const std::string_view mb = r.bytes(16, "server public key");
    check_public_key(r, mb, dhcast128_prime(), "server public key");
    const std::string_view sealed = r.bytes(32, "encrypted nonce and signature");
    Secret k{crypto::mod_exp(mb, ra_.s, dhcast128_prime(), 16)};
    Secret opened{crypto::cast5_cbc(false, k.s, kServerToClientIV, sealed)};
    Secret plain{crypto::increment(std::string_view(opened.s).substr(0, 16)) + password_.s};
    std::string out(id);
    out += crypto::cast5_cbc(true, k.s, kClientToServerIV, plain.s);
    return encode_login_cont(out);
  }

 private:
  std::string user_;
  Secret password_;
  RandomFn random_;
  Secret ra_;
  int step_ = 0;
};

class Dhx2Uam : public Uam {
 public:
  Dhx2Uam(const std::string& user, const std::string& password, RandomFn random)
      : user_(user), random_(std::move(random)) {
    check_password(kUamDhx2, password, kDhx2PasswordMax);
    password_.s = zero_padded(password, 256);
  }
  std::string name() const override { return std::string(kUamDhx2); }
  std::string login(std::string_view version) override {
    return encode_login(version, kUamDhx2, &user_, {});
  }
  std::string next(std::string_view reply) override {
    switch (step_++) {
      case 0:
        return key_exchange(reply);
      case 1:
        return prove(reply);
    }
    Reader(reply, "DHX2 FPLoginCont reply")
        .fail("step", "is past the last one (DHX2 takes two FPLoginCont)");
  }

 private:
  // Reply 1: id, g, len, p, Mb. We answer with Ma and our nonce, sealed.
  std::string key_exchange(std::string_view reply) {
    Reader r(reply, "DHX2 FPLogin reply");
    id_ = r.u16("session id");
    const uint32_t g = r.u32("generator g");
    const uint16_t len = r.u16("prime length");
    // 512 to 4096 bits: Apple's minimum to a generous maximum.
    if (len < 64 || len > 512) r.fail("prime length", fmt::format("is {}; expected 64-512", len));
    const std::string_view p = r.bytes(len, "prime p");
    const std::string_view mb = r.bytes(len, "server public key");
    if (r.remaining()) r.fail("length", fmt::format("has {} bytes too many", r.remaining()));
    if (!(static_cast<uint8_t>(p.back()) & 1)) r.fail("prime p", "is even");
    std::string gb(4, '\0');
    for (int i = 0; i < 4; ++i) gb[i] = static_cast<char>(g >> (24 - 8 * i));
    if (g < 2 || crypto::compare(gb, p) >= 0) r.fail("generator g", "is not in 2..p-1");
    check_public_key(r, mb, p, "server public key");
    Secret ra{random_(len)};
    const std::string ma = crypto::mod_exp(gb, ra.s, p, len);
    Secret k{crypto::mod_exp(mb, ra.s, p, len)};
    key_.s = crypto::md5(k.s);
    nonce_.s = random_(16);
    Writer w;
    w.u16(id_).bytes(ma).bytes(crypto::cast5_cbc(true, key_.s, kClientToServerIV, nonce_.s));
    return encode_login_cont(w.take());
  }
  // Reply 2: id+1, sealed(our nonce + 1, server nonce). We prove the key
  // back with server nonce + 1 and send the password.
  std::string prove(std::string_view reply) {
    Reader r(reply, "DHX2 FPLoginCont reply");
    const uint16_t id = r.u16("session id");
    if (id != static_cast<uint16_t>(id_ + 1)) {
      r.fail("session id", fmt::format("is {}; expected {}", id, uint16_t(id_ + 1)));
    }
    const std::string_view sealed = r.bytes(32, "encrypted nonces");
    if (r.remaining()) r.fail("length", fmt::format("has {} bytes too many", r.remaining()));
    Secret opened{crypto::cast5_cbc(false, key_.s, kServerToClientIV, sealed)};
    if (opened.s.compare(0, 16, crypto::increment(nonce_.s)) != 0) {
      throw Error(ErrorKind::kPeer,
                  "the AFP server failed the DHX2 key check (client nonce + 1 did not match)",
                  "the server is not the one it claims to be, or its DHX2 module is broken; "
                  "check the server");
    }
    Secret plain{crypto::increment(std::string_view(opened.s).substr(16, 16)) + password_.s};
    Writer w;
    w.u16(id).bytes(crypto::cast5_cbc(true, key_.s, kClientToServerIV, plain.s));
    return encode_login_cont(w.take());
  }

  std::string user_;
  Secret password_;
  RandomFn random_;
  int step_ = 0;
  uint16_t id_ = 0;
  Secret key_;
  Secret nonce_;
};

// CAST5 lives in OpenSSL 3's legacy provider; a private library context
// keeps it from changing which providers the rest of the process uses.
struct Cast5 {
  OSSL_LIB_CTX* ctx = nullptr;
  EVP_CIPHER* cipher = nullptr;
  Cast5() {
    ctx = OSSL_LIB_CTX_new();
    if (ctx && OSSL_PROVIDER_load(ctx, "legacy")) {
      cipher = EVP_CIPHER_fetch(ctx, "CAST5-CBC", nullptr);
    }
  }
};

}  // namespace

std::string_view dhcast128_prime() {
  return std::string_view(reinterpret_cast<const char*>(kDhcast128PrimeBytes), 16);
}

std::string canonical_uam(std::string_view name) {
  const std::string n = lower(name);
  if (n == lower(kUamGuest) || n == "guest") return std::string(kUamGuest);
  if (n == lower(kUamCleartext) || n == "clrtxt" || n == "cleartxt" || n == "cleartext") {
    return std::string(kUamCleartext);
  }
  if (n == lower(kUamDhcast128) || n == "dhx") return std::string(kUamDhcast128);
  if (n == lower(kUamDhx2)) return std::string(kUamDhx2);
  throw Error(ErrorKind::kConfig, fmt::format("unknown AFP UAM '{}' in the share URL", name),
              "use ;AUTH=DHX2, ;AUTH=DHCAST128, ;AUTH=Cleartxt%20Passwrd or "
              ";AUTH=No%20User%20Authent (or leave AUTH out to use the strongest offered)");
}

std::string choose_uam(const std::vector<std::string>& offered, std::string_view requested,
                       bool have_user, std::string_view server) {
  auto offers = [&](std::string_view u) {
    return std::find(offered.begin(), offered.end(), u) != offered.end();
  };
  std::string list;
  for (const auto& u : offered) list += (list.empty() ? "" : ", ") + u;
  if (list.empty()) list = "none";
  if (!requested.empty()) {
    if (!offers(requested)) {
      throw Error(
          ErrorKind::kConfig,
          fmt::format("AFP server {} does not offer the UAM '{}' named in the share URL", server,
                      requested),
          fmt::format("it offers: {}; name one of them with ;AUTH= or leave AUTH out", list));
    }
    if (requested != kUamGuest && !have_user) {
      throw Error(ErrorKind::kConfig, fmt::format("the AFP UAM '{}' needs a user name", requested),
                  "put user;AUTH=...@ in the URL or set the share's user");
    }
    return std::string(requested);
  }
  if (!have_user) {
    if (offers(kUamGuest)) return std::string(kUamGuest);
    throw Error(
        ErrorKind::kConfig,
        fmt::format("AFP server {} allows no guest login, and the share names no user", server),
        "give a user (afp://user@host/volume, or the share's user) and a password");
  }
  for (std::string_view u : {kUamDhx2, kUamDhcast128}) {
    if (offers(u)) return std::string(u);
  }
  // Cleartxt Passwrd sends the password as it is: only when asked for.
  if (offers(kUamCleartext)) {
    throw Error(ErrorKind::kConfig,
                fmt::format("AFP server {} offers only Cleartxt Passwrd for a password login "
                            "(it offers: {}), which sends the password unencrypted",
                            server, list),
                "enable DHX2 on the server (afp.conf: 'uam list = uams_dhx2.so'), or allow the "
                "clear-text login with the share option `options = uam=cleartxt` (or "
                ";AUTH=clrtxt in the URL)");
  }
  throw Error(ErrorKind::kConfig,
              fmt::format("AFP server {} offers no password UAM chokepoint speaks (it offers: {})",
                          server, list),
              "enable DHX2 on the server (afp.conf: 'uam list = uams_dhx2.so'), or use the "
              "guest login by naming no user");
}

std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  if (n && RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    throw Error(ErrorKind::kIo, "OpenSSL could not produce random bytes",
                "the system's entropy source failed; check /dev/urandom");
  }
  return out;
}

std::unique_ptr<Uam> make_uam(std::string_view name, const std::string& user,
                              const std::string& password, RandomFn random) {
  if (name == kUamGuest) return std::make_unique<GuestUam>();
  if (user.empty()) {
    throw Error(ErrorKind::kConfig, fmt::format("the AFP UAM '{}' needs a user name", name),
                "put user@ in the URL or set the share's user");
  }
  if (name == kUamCleartext) return std::make_unique<CleartextUam>(user, password);
  if (name == kUamDhcast128) return std::make_unique<Dhcast128Uam>(user, password, random);
  if (name == kUamDhx2) return std::make_unique<Dhx2Uam>(user, password, random);
  CP_CHECK(!"make_uam: not a canonical UAM name");
  return nullptr;
}

namespace crypto {

std::string cast5_cbc(bool encrypt, std::string_view key, std::string_view iv,
                      std::string_view data) {
  static const Cast5 cast5;
  CP_CHECK(key.size() == 16 && iv.size() == 8 && data.size() % 8 == 0);
  if (!cast5.cipher) {
    throw Error(ErrorKind::kUnsupported,
                "CAST5, which the AFP logins DHX2 and DHCAST128 need, is unavailable: OpenSSL's "
                "legacy provider did not load",
                "install OpenSSL 3's legacy provider (Debian: libssl3 ships "
                "ossl-modules/legacy.so), or log in with ;AUTH=Cleartxt%20Passwrd");
  }
  std::unique_ptr<EVP_CIPHER_CTX, void (*)(EVP_CIPHER_CTX*)> ctx(EVP_CIPHER_CTX_new(),
                                                                 EVP_CIPHER_CTX_free);
  CP_CHECK(ctx != nullptr);
  const auto* k = reinterpret_cast<const unsigned char*>(key.data());
  const auto* v = reinterpret_cast<const unsigned char*>(iv.data());
  bool ok = EVP_CipherInit_ex2(ctx.get(), cast5.cipher, nullptr, nullptr, encrypt, nullptr) &&
            EVP_CIPHER_CTX_set_key_length(ctx.get(), 16) &&
            EVP_CipherInit_ex2(ctx.get(), nullptr, k, v, encrypt, nullptr) &&
            EVP_CIPHER_CTX_set_padding(ctx.get(), 0);
  std::string out(data.size() + 8, '\0');
  int n1 = 0, n2 = 0;
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  ok = ok &&
       EVP_CipherUpdate(ctx.get(), o, &n1, reinterpret_cast<const unsigned char*>(data.data()),
                        static_cast<int>(data.size())) &&
       EVP_CipherFinal_ex(ctx.get(), o + n1, &n2);
  CP_CHECK(ok);
  out.resize(static_cast<size_t>(n1 + n2));
  return out;
}

std::string md5(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  CP_CHECK(EVP_Digest(data.data(), data.size(), out, &n, EVP_md5(), nullptr) == 1);
  return std::string(reinterpret_cast<const char*>(out), n);
}

std::string mod_exp(std::string_view base, std::string_view exp, std::string_view m, size_t width) {
  std::unique_ptr<BN_CTX, void (*)(BN_CTX*)> ctx(BN_CTX_new(), BN_CTX_free);
  CP_CHECK(ctx != nullptr);
  BnPtr b = bn(base), e = bn(exp), mod = bn(m);
  BnPtr r(BN_new(), BN_clear_free);
  CP_CHECK(r != nullptr && !BN_is_zero(mod.get()));
  CP_CHECK(BN_mod_exp(r.get(), b.get(), e.get(), mod.get(), ctx.get()) == 1);
  std::string out(width, '\0');
  CP_CHECK(BN_bn2binpad(r.get(), reinterpret_cast<unsigned char*>(out.data()),
                        static_cast<int>(width)) == static_cast<int>(width));
  return out;
}

std::string increment(std::string_view be) {
  std::string out(be);
  for (size_t i = out.size(); i-- > 0;) {
    out[i] = static_cast<char>(static_cast<uint8_t>(out[i]) + 1);
    if (out[i] != 0) break;
  }
  return out;
}

int compare(std::string_view a, std::string_view b) {
  auto strip = [](std::string_view s) {
    while (!s.empty() && s.front() == 0) s.remove_prefix(1);
    return s;
  };
  a = strip(a);
  b = strip(b);
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return uint8_t(a[i]) < uint8_t(b[i]) ? -1 : 1;
  }
  return 0;
}

bool is_probable_prime(std::string_view n) {
  std::unique_ptr<BN_CTX, void (*)(BN_CTX*)> ctx(BN_CTX_new(), BN_CTX_free);
  BnPtr b = bn(n);
  return BN_check_prime(b.get(), ctx.get(), nullptr) == 1;
}

}  // namespace crypto

}  // namespace cp::transfer::afp
