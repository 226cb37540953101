# Reads a message body Hearth stored with Rails' own Action Text (Debian's ruby-actiontext) and
# renders its mention attachments as Campfire does: the attachable located from the signed
# GlobalID (so the sgid must verify with the app's secret_key_base), its partial drawn inside
# the <action-text-attachment>, and the plain text with the attachable's representation.
#
#   ruby action_text.rb SECRET_KEY_BASE GID_APP 'ID=Name,ID=Name' < body.html
#
# Prints CONTENT_TYPE <type> and ATTACHABLE <id> <name> per attachment, PLAIN_TEXT <json> and
# RENDERED <json>.
#
# Debian's globalid (0.6) and ActiveSupport (6.1) predate the sgid format of Rails 7.1+, the
# one Campfire (Rails 8) and Hearth write: JSON `{"_rails":{"data":gid,"pur":purpose}}` signed
# with HMAC-SHA1 under key_generator.generate_key("signed_global_ids"), in URL-safe base64
# (globalid 1.2+'s GlobalID::Verifier). The verifier below checks
# the signature with 6.1's MessageVerifier, reads that envelope and hands globalid the fields
# it knows.
require "json"
require "openssl"
require "active_support"
require "active_support/core_ext"
require "action_view"
require "active_record"
require "global_id"
require "action_text"

secret_key_base, app, people = ARGV
NAMES = people.split(",").to_h { |pair| id, name = pair.split("=", 2); [id.to_i, name] }

class Rails71SignedGlobalIdVerifier
  def initialize(secret_key_base)
    # What Rails 7.0+'s KeyGenerator (PBKDF2-HMAC-SHA256, 1000 iterations) derives.
    key = OpenSSL::PKCS5.pbkdf2_hmac(secret_key_base, "signed_global_ids", 1000, 64, "SHA256")
    @key = key
    @verifier = ActiveSupport::MessageVerifier.new(key, digest: "SHA1", serializer: JSON)
  end

  # globalid 0.6 asks for `generate({"gid", "purpose", "expires_at"})`; this writes Rails
  # 7.1's token for it.
  def generate(fields)
    envelope = { "data" => fields["gid"] }
    envelope["exp"] = fields["expires_at"] if fields["expires_at"]
    envelope["pur"] = fields["purpose"] if fields["purpose"]
    data = Base64.strict_encode64({ "_rails" => envelope }.to_json)
    "#{data}--#{OpenSSL::HMAC.hexdigest("SHA1", @key, data)}"
  end

  def verify(sgid)
    # 6.1 checks the signature; its metadata reader knows only the older envelope.
    raise ActiveSupport::MessageVerifier::InvalidSignature unless @verifier.valid_message?(sgid)
    # globalid's verifier writes URL-safe base64; Ruby's urlsafe_decode64 reads both alphabets.
    envelope = JSON.parse(Base64.urlsafe_decode64(sgid[0...-42])).fetch("_rails")
    { "gid" => envelope["data"], "purpose" => envelope["pur"], "expires_at" => envelope["exp"] }
  end
end

GlobalID.app = app
SignedGlobalID.verifier = Rails71SignedGlobalIdVerifier.new(secret_key_base)

# The mentioned people, as Campfire's User::Mentionable presents them.
class User
  include GlobalID::Identification
  include ActionText::Attachable
  attr_reader :id, :name

  def self.find(id)
    new(id.to_i, NAMES.fetch(id.to_i))
  end

  def initialize(id, name)
    @id, @name = id, name
  end

  def attachable_plain_text_representation(caption = nil)
    "@#{name}"
  end

  # Hearth's chip, as Campfire's users/_mention partial draws its own.
  def mention_html
    %(<span class="mention" data-user-id="#{id}">@#{ERB::Util.html_escape(name)}</span>)
  end
end

content = ActionText::Content.new($stdin.read)
# The content type as stored (Action Text's in-memory attachment takes the attachable's).
content.send(:attachment_nodes).each { |node| puts "CONTENT_TYPE #{node["content-type"]}" }
content.attachments.each do |attachment|
  attachable = attachment.attachable
  raise "the sgid did not locate a user: #{attachment.to_html}" unless attachable.is_a?(User)
  puts "ATTACHABLE #{attachable.id} #{attachable.name}"
end
puts "PLAIN_TEXT #{content.to_plain_text.to_json}"
rendered = content.render_attachments do |attachment|
  attachment.node.tap { |node| node.inner_html = attachment.attachable.mention_html }
end
puts "RENDERED #{rendered.to_html.to_json}"
