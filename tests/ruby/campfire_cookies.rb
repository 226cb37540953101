# Campfire's signatures, made and read by Rails' own classes configured as Campfire's.
#
#   ruby tests/ruby/campfire_cookies.rb SECRET_KEY_BASE < commands
#
# Campfire (basecamp/once-campfire) runs Rails 8.2 with `config.load_defaults 8.2` and sets no
# cookie or verifier option of its own. What those defaults give, and what this script sets by
# hand because Debian's Rails (6.1) predates some of them:
#
# - the key generator: PBKDF2-HMAC-SHA256, 1000 iterations, 64-byte keys
#   (`active_support.key_generator_hash_digest_class = SHA256`, load_defaults 7.0). Rails 6.1's
#   KeyGenerator only knows SHA1, so `KeyGenerator256` below stands in for it.
# - the signed cookie jar (`cookies.signed`): salt "signed cookie", HMAC-SHA1
#   (`action_dispatch.signed_cookie_digest` unset, so the jar's "SHA1"), JSON cookie serializer
#   (load_defaults 7.0), cookies with metadata (load_defaults 6.0). Its verifier's serializer is
#   the NullSerializer, which Rails 7.1+ does not count as an envelope serializer, so Rails 8.2
#   still writes the envelope `{"_rails":{"message":base64(json),"exp":…,"pur":"cookie.NAME"}}`
#   that Rails 6.1 writes. Debian's ActionDispatch::Cookies jar is used as is.
# - signed global ids (globalid 1.3.0's railtie): `GlobalID::Verifier`, a MessageVerifier with
#   the key for salt "signed_global_ids", HMAC-SHA1, URL-safe base64 with padding, Rails 7.1+'s
#   envelope `{"_rails":{"data":"gid://campfire/User/1?expires_in","pur":"attachable"}}`
#   (`attachable_sgid` is `to_sgid(expires_in: nil, for: "attachable")`, and GlobalID.create
#   keeps `expires_in` as a query parameter of the gid). Rails 6.1's MessageVerifier writes
#   only the older envelope, so `SgidVerifier` signs the 7.1+ envelope, encoded by
#   ActiveSupport::JSON, itself. `legacy` signs the form of Rails 7.0 apps:
#   `{"_rails":{"message":base64(Marshal.dump(gid)),"exp":null,"pur":"attachable"}}`.
#
# Commands, one a line, fields separated by tabs; one answer line each:
#   cookie NAME VALUE               -> Set-Cookie of cookies.signed.permanent[NAME] = { value:, httponly: true, same_site: :lax }
#   expired NAME VALUE              -> Set-Cookie of cookies.signed[NAME] = { value:, expires: 1.minute.ago }
#   read NAME RAW                   -> what cookies.signed[NAME] reads from the cookie NAME=RAW, `inspect`ed
#   sgid MODEL ID                   -> attachable_sgid of record ID of MODEL
#   sgid_legacy MODEL ID            -> the same in Rails 7.0's envelope
#   locate SGID                     -> the gid a signed global id names for "attachable", or nil
#   signed_id MODEL_NAME ID PURPOSE -> record.signed_id(purpose:) (Campfire's avatar_token: user ID avatar)
require "set"
require "json"
require "base64"
require "openssl"
require "active_support"
require "active_support/core_ext"
require "active_support/json"
require "active_support/message_verifier"
require "active_support/messages/rotation_configuration"
require "action_dispatch"
require "action_dispatch/middleware/cookies"
require "rack/mock"

SECRET_KEY_BASE = ARGV.fetch(0)
APP = "campfire"

# ActiveSupport::KeyGenerator of Rails 7.0+ with `hash_digest_class: OpenSSL::Digest::SHA256`.
class KeyGenerator256
  def initialize(secret)
    @secret = secret
  end

  def generate_key(salt, key_size = 64)
    OpenSSL::PKCS5.pbkdf2_hmac(@secret, salt, 1000, key_size, OpenSSL::Digest::SHA256.new)
  end
end

KEYS = ActiveSupport::CachingKeyGenerator.new(KeyGenerator256.new(SECRET_KEY_BASE))

# A request as Rails' env_config makes it for a Campfire with load_defaults 8.2.
def request(cookie_header = nil)
  env = Rack::MockRequest.env_for("http://campfire.example/")
  env["HTTP_COOKIE"] = cookie_header if cookie_header
  env.merge!(
    "action_dispatch.key_generator" => KEYS,
    "action_dispatch.secret_key_base" => SECRET_KEY_BASE,
    "action_dispatch.signed_cookie_salt" => "signed cookie",
    "action_dispatch.signed_cookie_digest" => nil,
    "action_dispatch.cookies_serializer" => :json,
    "action_dispatch.cookies_digest" => nil,
    "action_dispatch.cookies_rotations" => ActiveSupport::Messages::RotationConfiguration.new,
    "action_dispatch.cookies_same_site_protection" => proc { :lax },
    "action_dispatch.use_cookies_with_metadata" => true,
  )
  ActionDispatch::Request.new(env)
end

def set_cookie
  jar = request.cookie_jar
  yield jar
  headers = {}
  jar.write(headers)
  Array(headers["Set-Cookie"]).join("\n").split("\n").first
end

# globalid 1.3.0's GlobalID::Verifier: URL-safe base64 (with padding) around the signed data.
class SgidVerifier < ActiveSupport::MessageVerifier
  def initialize
    super(KEYS.generate_key("signed_global_ids"), digest: "SHA1", serializer: ActiveSupport::MessageEncryptor::NullSerializer)
  end

  # The Rails 7.1+ envelope, as Messages::Metadata#serialize_with_metadata writes it with a JSON
  # serializer: `data` inline, `exp` only when there is one.
  def attachable(gid)
    generate(ActiveSupport::JSON.encode({ "_rails" => { "data" => gid, "pur" => "attachable" } }))
  end

  # Rails 7.0: the Marshal-dumped gid, base64 in the `message` member.
  def attachable_legacy(gid)
    message = Base64.strict_encode64(Marshal.dump(gid))
    generate(ActiveSupport::JSON.encode({ "_rails" => { "message" => message, "exp" => nil, "pur" => "attachable" } }))
  end

  # SignedGlobalID.parse(sgid, for: "attachable")'s check, for either envelope. The separator
  # is found at its fixed place before the 40 hex digits, as Rails 7.1+ finds it (URL-safe
  # base64 may itself hold "--"); 6.1's own reader would also unwrap only the older envelope.
  def locate(sgid)
    encoded, separator, digest = sgid[0...-42], sgid[-42, 2], sgid[-40..]
    return nil unless separator == "--" && !encoded.to_s.empty?
    return nil unless ActiveSupport::SecurityUtils.secure_compare(digest, generate_digest(encoded))
    rails = JSON.parse(decode(encoded))["_rails"] or return nil
    return nil unless rails["pur"] == "attachable"
    return nil if rails["exp"] && Time.now.utc >= Time.iso8601(rails["exp"])
    rails.key?("data") ? rails["data"] : Marshal.load(Base64.strict_decode64(rails["message"]))
  end

  private
    def encode(data)
      Base64.urlsafe_encode64(data)
    end

    def decode(data)
      Base64.urlsafe_decode64(data)
    end
end

SGIDS = SgidVerifier.new

# Active Record's signed ids as Rails 8.2 makes them by default (`use_legacy_signed_id_verifier =
# :generate_and_verify`): the key for "active_record/signed_id", HMAC-SHA256, the JSON
# serializer's 7.1+ envelope, URL-safe base64 without padding. Rails 6.1's verifier has no
# URL-safe option, so the encoding is set here.
class SignedIdVerifier < ActiveSupport::MessageVerifier
  def initialize
    super(KEYS.generate_key("active_record/signed_id"), digest: "SHA256", serializer: ActiveSupport::MessageEncryptor::NullSerializer)
  end

  # `record.signed_id(purpose:)` of a record of `model_name` (underscored), without expiry.
  def signed_id(model_name, id, purpose)
    generate(JSON.dump({ "_rails" => { "data" => id, "pur" => "#{model_name}/#{purpose}" } }))
  end

  private
    def encode(data)
      Base64.urlsafe_encode64(data, padding: false)
    end
end

SIGNED_IDS = SignedIdVerifier.new

def answer(command, *args)
  case command
  when "cookie"
    name, value = args
    set_cookie { |jar| jar.signed.permanent[name] = { value: value, httponly: true, same_site: :lax } }
  when "expired"
    name, value = args
    set_cookie { |jar| jar.signed[name] = { value: value, expires: 1.minute.ago, httponly: true } }
  when "read"
    name, raw = args
    request("#{name}=#{raw}").cookie_jar.signed[name].inspect
  when "sgid"
    model, id = args
    SGIDS.attachable("gid://#{APP}/#{model}/#{id}?expires_in")
  when "sgid_legacy"
    model, id = args
    SGIDS.attachable_legacy("gid://#{APP}/#{model}/#{id}?expires_in")
  when "signed_id"
    model_name, id, purpose = args
    SIGNED_IDS.signed_id(model_name, Integer(id), purpose)
  when "locate"
    SGIDS.locate(args.first).inspect
  else
    raise ArgumentError, "unknown command #{command.inspect}"
  end
end

STDIN.each_line do |line|
  line = line.chomp
  next if line.empty?
  puts answer(*line.split("\t"))
end
