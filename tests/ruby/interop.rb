# Rails' own ActiveSupport on the other side of Hearth's signatures.
#
#   ruby tests/ruby/interop.rb SECRET_KEY_BASE HEARTH_SHA256_NAME HEARTH_SHA1_NAME HEARTH_COOKIE
#
# Verifies the signed stream names Hearth made (Turbo's verifier: MessageVerifier, SHA256, JSON
# serializer; key by PBKDF2 with SHA256 as Rails 7.0+ defaults, or SHA1 as before) and the
# signature of Hearth's signed `session_token` cookie (and its envelope); then prints names and a cookie signed by
# ActiveSupport for Hearth to verify. Output: one `KEY value` line each.
require "active_support"
require "active_support/message_verifier"
require "json"
require "openssl"
require "base64"
require "cgi"

skb, sha256_name, sha1_name, cookie = ARGV
key = ->(salt, digest) { OpenSSL::PKCS5.pbkdf2_hmac(skb, salt, 1000, 64, digest.new) }
turbo256 = ActiveSupport::MessageVerifier.new(key.("turbo/signed_stream_verifier_key", OpenSSL::Digest::SHA256), digest: "SHA256", serializer: JSON)
turbo1 = ActiveSupport::MessageVerifier.new(key.("turbo/signed_stream_verifier_key", OpenSSL::Digest::SHA1), digest: "SHA256", serializer: JSON)
puts "VERIFIED_SHA256 #{turbo256.verified(sha256_name).inspect}"
puts "VERIFIED_SHA1 #{turbo1.verified(sha1_name).inspect}"
puts "SIGNED_SHA256 #{turbo256.generate("rooms")}"

# The signed cookie jar of Rails' defaults since 7.0: the SHA256-derived key, HMAC-SHA1 (no
# app sets `signed_cookie_digest`), the `message` envelope (what every Rails writes for cookies;
# tests/ruby/campfire_cookies.rb reads Hearth's cookie with Rails' whole cookie jar).
jar = ActiveSupport::MessageVerifier.new(key.("signed cookie", OpenSSL::Digest::SHA256), digest: "SHA1", serializer: ActiveSupport::MessageEncryptor::NullSerializer)
raw = CGI.unescape(cookie)
envelope = jar.valid_message?(raw) ? JSON.parse(Base64.strict_decode64(raw.split("--").first)) : nil
puts "COOKIE_PURPOSE #{envelope && envelope.dig("_rails", "pur")}"
puts "COOKIE_VALUE #{envelope && JSON.parse(Base64.strict_decode64(envelope.dig("_rails", "message")))}"
legacy = { "_rails" => { "message" => Base64.strict_encode64(JSON.dump("tok-from-rails")), "exp" => nil, "pur" => "cookie.session_token" } }
puts "SIGNED_COOKIE #{CGI.escape(jar.generate(JSON.dump(legacy)))}"
