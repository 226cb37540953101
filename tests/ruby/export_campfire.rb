# Opens what `hearth export` wrote as Campfire would: ActiveRecord models declared as
# Campfire's (`app/models/**`: STI rooms, integer and string enums, `has_secure_password`, the
# Action Text row of a message's body, Active Storage's tables) on
# `STORAGE/db/production.sqlite3`, and Active Storage's own disk service on `STORAGE/files`.
# Checks them against what Hearth held (EXPECTED, a JSON file the test writes) and prints one
# `CHECKED <what>` line per check; any difference raises (exit status 1) with both values.
#
#   ruby export_campfire.rb STORAGE EXPECTED.json
#
# Needs Debian's ruby-activerecord, ruby-sqlite3, ruby-bcrypt and ruby-activestorage.
require "json"
require "base64"
require "digest"
require "tmpdir"
require "bcrypt"
require "active_record"
require "active_support"
require "active_support/core_ext"
require "active_storage"
require "active_storage/service/disk_service"

storage, expected_path = ARGV
expected = JSON.parse(File.read(expected_path))

def check(what, found, wanted)
  raise "#{what}: found #{found.inspect}, expected #{wanted.inspect}" unless found == wanted
  puts "CHECKED #{what}"
end

ActiveRecord::Base.establish_connection(
  adapter: "sqlite3", database: File.join(storage, "db", "production.sqlite3")
)

class ApplicationRecord < ActiveRecord::Base
  self.abstract_class = true
end

class Account < ApplicationRecord
  has_one :logo_attachment, -> { where(name: "logo") }, class_name: "Attachment", as: :record
end

class User < ApplicationRecord
  enum role: %i[ member administrator bot ]
  enum status: %i[ active deactivated banned ]
  has_secure_password validations: false
  has_many :memberships
  has_many :sessions
  has_many :bans
  has_many :push_subscriptions
  has_many :searches
  has_one :webhook
  has_one :avatar_attachment, -> { where(name: "avatar") }, class_name: "Attachment", as: :record
end

class Room < ApplicationRecord
  has_many :memberships
  has_many :messages
  belongs_to :creator, class_name: "User"
end

module Rooms
  class Open < Room; end
  class Closed < Room; end
  class Direct < Room; end
end

class Membership < ApplicationRecord
  belongs_to :room
  belongs_to :user
  enum involvement: %w[ invisible nothing mentions everything ].index_by(&:itself), _prefix: :involved_in
end

class RichText < ApplicationRecord
  self.table_name = "action_text_rich_texts"
  belongs_to :record, polymorphic: true
end

class Blob < ApplicationRecord
  self.table_name = "active_storage_blobs"
  has_many :variant_records
  serialize :metadata, JSON
end

class Attachment < ApplicationRecord
  self.table_name = "active_storage_attachments"
  belongs_to :record, polymorphic: true
  belongs_to :blob
end

class VariantRecord < ApplicationRecord
  self.table_name = "active_storage_variant_records"
  belongs_to :blob
end

class Message < ApplicationRecord
  belongs_to :room
  belongs_to :creator, class_name: "User"
  has_many :boosts
  # `has_rich_text :body`, read as Action Text reads it.
  has_one :rich_text_body, -> { where(name: "body") }, class_name: "RichText", as: :record
  # `has_one_attached :attachment`.
  has_one :attachment_attachment, -> { where(name: "attachment") }, class_name: "Attachment", as: :record
end

class Boost < ApplicationRecord
  belongs_to :message
  belongs_to :booster, class_name: "User"
end

class Session < ApplicationRecord
  belongs_to :user
end

class Ban < ApplicationRecord
  belongs_to :user
end

class Search < ApplicationRecord
  belongs_to :user
end

class Webhook < ApplicationRecord
  belongs_to :user
end

class PushSubscription < ApplicationRecord
  belongs_to :user
end

# --- the schema -------------------------------------------------------------------------------
# Campfire's db/migrate/ file names at schema version 2025_12_12_154340.
CAMPFIRE_MIGRATIONS = %w[
  20231215043540_create_initial_schema.rb
  20231220143106_add_bio_to_users.rb
  20240110071740_create_sessions.rb
  20240115124901_remove_owner_role.rb
  20240130003150_create_webhooks.rb
  20240130213001_add_custom_styles_to_accounts.rb
  20240131105830_alter_users_set_password_digest_not_null.rb
  20240209110503_alter_users_add_bot_token.rb
  20250825100957_add_service_name_to_active_storage_blobs.active_storage.rb
  20250825100958_create_active_storage_variant_records.active_storage.rb
  20250825100959_remove_not_null_on_active_storage_blobs_checksum.active_storage.rb
  20251126092013_create_bans.rb
  20251126115722_change_active_to_status_on_users.rb
  20251126130131_add_account_settings.rb
  20251212154340_add_singleton_constraint_to_accounts.rb
]

def needs_migration?(names)
  Dir.mktmpdir do |dir|
    names.each { |name| File.write(File.join(dir, name), "") }
    ActiveRecord::MigrationContext.new(dir, ActiveRecord::SchemaMigration).needs_migration?
  end
end

check "no migration of Campfire's pending", needs_migration?(CAMPFIRE_MIGRATIONS), false
check "a newer migration would be pending", needs_migration?(CAMPFIRE_MIGRATIONS + ["20260101000000_later.rb"]), true
check "the environment", ActiveRecord::InternalMetadata[:environment], "production"
check "users.role is an integer defaulting to 0",
  [User.columns_hash["role"].type, User.columns_hash["role"].default], [:integer, "0"]
check "datetime(6) columns", Message.columns_hash["created_at"].sql_type, "datetime(6)"
check "the account's singleton guard", Account.columns_hash["singleton_guard"].default, "0"
check "one account", Account.count, 1
check "the account's settings (JSON)", Account.first.settings, expected.fetch("settings")

# --- counts ------------------------------------------------------------------------------------
models = {
  "accounts" => Account, "users" => User, "rooms" => Room, "memberships" => Membership,
  "messages" => Message, "action_text_rich_texts" => RichText, "boosts" => Boost,
  "sessions" => Session, "bans" => Ban, "searches" => Search, "webhooks" => Webhook,
  "push_subscriptions" => PushSubscription, "active_storage_blobs" => Blob,
  "active_storage_attachments" => Attachment, "active_storage_variant_records" => VariantRecord
}
expected.fetch("counts").each do |table, n|
  found = if table == "message_search_index"
    ActiveRecord::Base.connection.select_value("SELECT COUNT(*) FROM message_search_index")
  else
    models.fetch(table).count
  end
  check "#{table} count", found, n
end

# --- people ------------------------------------------------------------------------------------
person = expected.fetch("person")
user = User.find_by!(email_address: person.fetch("email"))
check "#{user.name}'s password (bcrypt)", BCrypt::Password.new(user.password_digest) == person.fetch("password"), true
check "#{user.name}'s password (has_secure_password)", user.authenticate(person.fetch("password")) == user, true
check "#{user.name}'s wrong password", user.authenticate("not-#{person.fetch("password")}"), false
check "#{user.name}'s role", user.role, person.fetch("role")
check "#{user.name}'s avatar", user.avatar_attachment&.blob&.filename, person.fetch("avatar_filename")

bot = User.find(expected.fetch("bot").fetch("id"))
check "the bot's role", bot.bot?, true
check "the bot's webhook", bot.webhook&.url, expected.fetch("bot").fetch("webhook_url")

ban = expected.fetch("ban")
banned = User.find(ban.fetch("user_id"))
check "the banned user's status", banned.status, "banned"
check "the ban's address", banned.bans.pluck(:ip_address), [ban.fetch("ip_address")]

check "the push subscription", PushSubscription.pluck(:endpoint), expected.fetch("push_endpoints")
check "the recent search", Search.pluck(:query), expected.fetch("searches")
check "sessions by token", Session.order(:id).pluck(:token), expected.fetch("session_tokens")

# --- rooms -------------------------------------------------------------------------------------
expected.fetch("rooms").each do |id, type|
  room = Room.find(id)
  check "room #{id}'s class", room.class.name, type
  check "room #{id}'s creator", room.creator.present?, true
end
check "open rooms", Rooms::Open.count, expected.fetch("open_rooms")
check "involvements", Membership.group(:involvement).count, expected.fetch("involvements")
check "unread memberships", Membership.where.not(unread_at: nil).count, expected.fetch("unread")
check "direct rooms notify of everything",
  Membership.joins(:room).where(rooms: { type: "Rooms::Direct" }).all?(&:involved_in_everything?), true

# --- a message with a mention -----------------------------------------------------------------
mention = expected.fetch("mention")
message = Message.find(mention.fetch("message_id"))
body = message.rich_text_body
check "the mention's body", body.body, mention.fetch("html")
tag = body.body[/<action-text-attachment [^>]*content-type="application\/vnd\.campfire\.mention"[^>]*>/]
sgid = tag && tag[/ sgid="([^"]+)"/, 1]
check "the mention attachment", sgid.nil?, false
# globalid's verifier: URL-safe base64 with padding; the gid keeps `?expires_in` as Campfire's does.
payload = JSON.parse(Base64.urlsafe_decode64(sgid.split("--").first))
check "the mention names the user",
  payload.dig("_rails", "data").match?(%r{/User/#{mention.fetch("user_id")}(\?|\z)}), true
check "the mention's purpose", payload.dig("_rails", "pur"), "attachable"
hits = Message.joins("join message_search_index idx on messages.id = idx.rowid")
              .where("idx.body match ?", mention.fetch("search_word")).pluck(:id)
check "Campfire's search finds it", hits.include?(message.id), true
check "a boost's message", Boost.all.all? { |b| b.message.present? && b.booster.present? }, true

# --- times -------------------------------------------------------------------------------------
expected.fetch("times").each do |t|
  record = models.fetch(t.fetch("table")).find(t.fetch("id"))
  raw = record.read_attribute_before_type_cast(t.fetch("column"))
  check "#{t["table"]} #{t["id"]} #{t["column"]} as Rails writes it",
    raw.match?(/\A\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}\z/), true
  ms = (record.public_send(t.fetch("column")).to_r * 1000).round
  check "#{t["table"]} #{t["id"]} #{t["column"]} instant", ms, t.fetch("ms")
end

# --- files -------------------------------------------------------------------------------------
disk = ActiveStorage::Service::DiskService.new(root: File.join(storage, "files"))
Blob.find_each do |blob|
  path = disk.path_for(blob.key)
  check "blob #{blob.id}'s file exists", File.file?(path), true
  check "blob #{blob.id}'s size", File.size(path), blob.byte_size
  check "blob #{blob.id}'s checksum", Digest::MD5.base64digest(File.binread(path)), blob.checksum
  check "blob #{blob.id}'s service", blob.service_name, "local"
end
file = expected.fetch("file")
posted = Message.find(file.fetch("message_id"))
blob = posted.attachment_attachment&.blob
check "the posted file's blob", [blob&.key, blob&.checksum, blob&.filename], [file.fetch("key"), file.fetch("checksum"), file.fetch("filename")]
check "the posted file's bytes", Digest::MD5.base64digest(File.binread(disk.path_for(blob.key))), file.fetch("checksum")
check "the posted file's thumbnail", blob.variant_records.count, 1
thumb = Attachment.find_by!(record_type: "ActiveStorage::VariantRecord", record_id: blob.variant_records.first.id, name: "image").blob
check "the thumbnail's file", File.file?(disk.path_for(thumb.key)), true
check "the blob's metadata", blob.metadata["width"], file.fetch("width")
puts "ALL CHECKED"
