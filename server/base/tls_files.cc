#include "server/base/tls_files.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace dpq {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioFree>;

absl::StatusOr<Bio> Open(const std::string& path) {
  Bio bio(BIO_new_file(path.c_str(), "r"));
  if (bio == nullptr) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  return bio;
}

}  // namespace

absl::Status CheckCertificateFile(const std::string& path, absl::string_view flag) {
  absl::StatusOr<Bio> bio = Open(path);
  if (!bio.ok()) return bio.status();
  std::unique_ptr<X509, X509Free> cert(PEM_read_bio_X509(bio->get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, " holds no PEM certificate"));
  }
  return absl::OkStatus();
}

absl::Status CheckCertificateAndKey(const std::string& cert_path, const std::string& key_path) {
  absl::StatusOr<Bio> cert_bio = Open(cert_path);
  if (!cert_bio.ok()) return cert_bio.status();
  std::unique_ptr<X509, X509Free> cert(
      PEM_read_bio_X509(cert_bio->get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert ", cert_path, " holds no PEM certificate"));
  }
  absl::StatusOr<Bio> key_bio = Open(key_path);
  if (!key_bio.ok()) return key_bio.status();
  std::unique_ptr<EVP_PKEY, KeyFree> key(
      PEM_read_bio_PrivateKey(key_bio->get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-key ", key_path, " holds no unencrypted PEM private key"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-key ", key_path, " is not the private key of the certificate in ", cert_path));
  }
  return absl::OkStatus();
}

}  // namespace dpq
