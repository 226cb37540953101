# Resolves Hearth's Active Storage URLs with Rails' own Active Storage (Debian's
# ruby-activestorage): the verifier built as `app.message_verifier("ActiveStorage")` builds it,
# then a blob's signed id, a representation's variation key and a disk service URL's key.
# Prints what it found, and a signed id Rails made, for Hearth to resolve.
#
#   ruby active_storage.rb SECRET_KEY_BASE sha256|sha1 SIGNED_ID VARIATION_KEY DISK_TOKEN
require "openssl"
require "active_support"
require "active_support/core_ext"
require "active_storage"
require File.join(Gem.loaded_specs["activestorage"].full_gem_path, "app/models/active_storage/variation")

secret_key_base, digest, signed_id, variation_key, disk_token = ARGV
# ActiveSupport 6.1's KeyGenerator is PBKDF2-HMAC-SHA1 only; Rails 7.0+ defaults to SHA256
# (`hash_digest_class`), the same PBKDF2 with another digest, done here by hand.
key = if digest == "sha1"
  ActiveSupport::KeyGenerator.new(secret_key_base, iterations: 1000).generate_key("ActiveStorage")
else
  OpenSSL::PKCS5.pbkdf2_hmac(secret_key_base, "ActiveStorage", 1000, 64, OpenSSL::Digest::SHA256.new)
end
ActiveStorage.verifier = ActiveSupport::MessageVerifier.new(key)

puts "BLOB_ID #{ActiveStorage.verifier.verified(signed_id, purpose: :blob_id).inspect}"
variation = ActiveStorage::Variation.decode(variation_key)
puts "TRANSFORMATIONS #{variation.transformations.inspect}"
puts "DIGEST #{variation.digest}"
puts "SAME_KEY #{ActiveStorage::Variation.new(resize_to_limit: [1200, 800]).key == variation_key}"
disk = ActiveStorage.verifier.verified(disk_token, purpose: :blob_key)
puts "DISK_KEY #{disk && disk[:key]}"
puts "DISK_TYPE #{disk && disk[:content_type]}"
puts "DISK_DISPOSITION #{disk && disk[:disposition]}"
puts "SIGNED_BY_RAILS #{ActiveStorage.verifier.generate(77, purpose: :blob_id)}"
