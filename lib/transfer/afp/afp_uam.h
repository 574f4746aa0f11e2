// AFP user authentication methods (UAMs), client side: the FPLogin and
// FPLoginCont requests of "No User Authent" (guest), "Cleartxt Passwrd",
// "DHCAST128" (128-bit Diffie-Hellman, CAST5 password) and "DHX2"
// (server-chosen group, MD5 of the shared secret as CAST5 key, nonces both
// ways), as netatalk's uams_guest, uams_passwd, uams_dhx_passwd and
// uams_dhx2_passwd expect them. Crypto is OpenSSL's (CAST5 from its legacy
// provider, loaded into a private library context). Internal to lib/transfer.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cp::transfer::afp {

inline constexpr std::string_view kUamGuest = "No User Authent";
inline constexpr std::string_view kUamCleartext = "Cleartxt Passwrd";
inline constexpr std::string_view kUamDhcast128 = "DHCAST128";
inline constexpr std::string_view kUamDhx2 = "DHX2";

// Longest passwords each UAM can carry (bytes).
constexpr size_t kCleartextPasswordMax = 8;
constexpr size_t kDhcast128PasswordMax = 64;
constexpr size_t kDhx2PasswordMax = 255;

// DHCAST128's fixed group: a 128-bit prime and generator 7.
std::string_view dhcast128_prime();
constexpr unsigned kDhcast128Generator = 7;
// CAST5-CBC initialisation vectors fixed by Apple, per direction.
inline constexpr std::string_view kClientToServerIV = "LWallace";
inline constexpr std::string_view kServerToClientIV = "CJalbert";

// The canonical UAM for a name from a URL (";AUTH=..."): the UAM names
// themselves case-insensitively, or afpcmd's short names guest, clrtxt,
// dhx (DHCAST128), dhx2 and cleartxt. Throws Error(kConfig) for an unknown name.
std::string canonical_uam(std::string_view name);

// The UAM to log in with: `requested` (canonical; empty: none) when the
// server offers it, else the strongest one offered that fits: with a user
// DHX2, then DHCAST128; without a user, No User Authent. Cleartxt Passwrd
// (the password in the clear) only when requested: a server that offers no
// other password UAM is refused with Error(kConfig) naming the share option
// uam=cleartxt. Throws Error(kConfig) naming `server` and what it offers
// when none fits.
std::string choose_uam(const std::vector<std::string>& offered, std::string_view requested,
                       bool have_user, std::string_view server);

// n random bytes (OpenSSL's CSPRNG).
std::string random_bytes(size_t n);
using RandomFn = std::function<std::string(size_t)>;

// One login conversation.
class Uam {
 public:
  virtual ~Uam() = default;
  virtual std::string name() const = 0;
  // The FPLogin request for AFP `version`.
  virtual std::string login(std::string_view version) = 0;
  // The FPLoginCont request answering the payload of the server's
  // kFPAuthContinue reply. Throws Error(kPeer) naming the field when the
  // reply is malformed or fails its proof (DHX2's nonce).
  virtual std::string next(std::string_view reply) = 0;
};

// Throws Error(kConfig) when the password is too long for the UAM or a
// password UAM has no user.
std::unique_ptr<Uam> make_uam(std::string_view name, const std::string& user,
                              const std::string& password, RandomFn random = random_bytes);

// Primitives, on big-endian unsigned integers as byte strings; also used by
// the test peer's server side.
namespace crypto {
// CAST5-CBC without padding (data: a multiple of 8 bytes; key: 16 bytes).
// Throws Error(kUnsupported) when OpenSSL's legacy provider does not load.
std::string cast5_cbc(bool encrypt, std::string_view key, std::string_view iv,
                      std::string_view data);
std::string md5(std::string_view data);
// base^exp mod m, left-padded with zeros to `width` bytes.
std::string mod_exp(std::string_view base, std::string_view exp, std::string_view m, size_t width);
// be + 1 modulo 2^(8 * size).
std::string increment(std::string_view be);
// -1, 0, 1 comparing unsigned big-endian numbers of any lengths.
int compare(std::string_view a, std::string_view b);
bool is_probable_prime(std::string_view n);
}  // namespace crypto

}  // namespace cp::transfer::afp
