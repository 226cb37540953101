# Builds a Campfire `storage/` directory the way a Campfire server leaves it, with Ruby's own
# ActiveRecord (Debian's ruby-activerecord, ruby-sqlite3, ruby-bcrypt): the database
# `OUT_DIR/db/production.sqlite3` with Campfire's schema at version 2025_12_12_154340 (every
# table, column, type, default, index and foreign key of Campfire's db/schema.rb, defined here
# from its facts), filled through ActiveRecord models with Campfire-shaped rows, and the disk
# service's files under `OUT_DIR/files/<key[0,2]>/<key[2,4]>/<key>`.
#
#   ruby campfire_storage.rb OUT_DIR SECRET_KEY_BASE
#
# Prints one JSON object: the rows per table, the known passwords, ids and keys the tests ask
# about. Mention sgids are signed with SECRET_KEY_BASE as Rails 7.1+ signs them (see
# tests/ruby/action_text.rb for why by hand: Debian's globalid predates that envelope).
require "json"
require "base64"
require "digest"
require "fileutils"
require "openssl"
require "zlib"
require "bcrypt"
require "active_support"
require "active_support/core_ext"
require "active_record"
require "active_storage"
require File.join(Gem.loaded_specs["activestorage"].full_gem_path, "app/models/active_storage/variation")

out_dir, secret_key_base = ARGV
abort "usage: campfire_storage.rb OUT_DIR SECRET_KEY_BASE" unless out_dir && secret_key_base

FileUtils.mkdir_p(File.join(out_dir, "db"))
FileUtils.mkdir_p(File.join(out_dir, "files"))
DATABASE = File.join(out_dir, "db", "production.sqlite3")
FILES = File.join(out_dir, "files")

ActiveRecord::Base.default_timezone = :utc
ActiveRecord::Base.logger = nil
ActiveRecord::Base.establish_connection(adapter: "sqlite3", database: DATABASE)
ActiveRecord::Migration.verbose = false

# --- the schema ------------------------------------------------------------------------------
# Rails 7.0+ gives `t.datetime` a precision of 6 (SQLite type `datetime(6)`); ActiveRecord 6.1
# is told so for each one. The foreign keys (`add_foreign_key` in Campfire's schema) are
# declared inside each table: ActiveRecord 6.1 adds them to an SQLite table by copying it, which
# drops the AUTOINCREMENT of its id; Rails 7.1+ keeps it, and so does a key declared here.
ActiveRecord::Schema.define(version: 2025_12_12_154340) do
  create_table :accounts, force: :cascade do |t|
    t.string :name, null: false
    t.string :join_code, null: false
    t.text :custom_styles
    t.json :settings
    t.integer :singleton_guard, null: false, default: 0
    t.datetime :created_at, precision: 6, null: false
    t.datetime :updated_at, precision: 6, null: false
    t.index :singleton_guard, unique: true
  end

  create_table :action_text_rich_texts, force: :cascade do |t|
    t.string :name, null: false
    t.text :body
    t.string :record_type, null: false
    t.bigint :record_id, null: false
    t.datetime :created_at, precision: 6, null: false
    t.datetime :updated_at, precision: 6, null: false
    t.index [:record_type, :record_id, :name], name: "index_action_text_rich_texts_uniqueness", unique: true
  end

  create_table :active_storage_blobs, force: :cascade do |t|
    t.string :key, null: false
    t.string :filename, null: false
    t.string :content_type
    t.text :metadata
    t.string :service_name, null: false
    t.bigint :byte_size, null: false
    t.string :checksum
    t.datetime :created_at, precision: 6, null: false
    t.index :key, unique: true
  end

  create_table :active_storage_attachments, force: :cascade do |t|
    t.string :name, null: false
    t.string :record_type, null: false
    t.bigint :record_id, null: false
    t.bigint :blob_id, null: false
    t.datetime :created_at, precision: 6, null: false
    t.index :blob_id
    t.index [:record_type, :record_id, :name, :blob_id], name: "index_active_storage_attachments_uniqueness", unique: true
    t.foreign_key :active_storage_blobs, column: :blob_id
  end

  create_table :active_storage_variant_records, force: :cascade do |t|
    t.bigint :blob_id, null: false
    t.string :variation_digest, null: false
    t.index [:blob_id, :variation_digest], name: "index_active_storage_variant_records_uniqueness", unique: true
    t.foreign_key :active_storage_blobs, column: :blob_id
  end

  create_table :bans, force: :cascade do |t|
    t.integer :user_id, null: false
    t.string :ip_address, null: false
    t.datetime :created_at, precision: 6, null: false
    t.datetime :updated_at, precision: 6, null: false
    t.index :ip_address
    t.index :user_id
    t.foreign_key :users
  end

  create_table :boosts, force: :cascade do |t|
    t.integer :message_id, null: false
    t.integer :booster_id, null: false
    t.string :content, limit: 16, null: false
    t.datetime :created_at, precision: 6, null: false
    t.datetime :updated_at, precision: 6, null: false
    t.index :booster_id
    t.index :message_id
    t.foreign_key :messages
  end

  create_table :memberships, force: :cascade do |t|
    t.integer :room_id, null: false
    t.integer :user_id, null: false
    t.string :involvement, default: "mentions"
    t.datetime :unread_at, precision: 6
    t.integer :connections, null: false, default: 0
    t.datetime :connected_at, precision: 6
    t.datetime :created_at, precision: 6, null: false
    t.datetime :updated_at, precision: 6, null: false
    t.index [:room_id, :created_at]
    t.index [:room_id, :user_id], unique: true
    t.index :room_id
    t.index :user_id
  end

  create_table :messages, force: :cascade do |t|
    t.integer :room_id, null: false
    t.integer :creator_id, null: false
    t.string :client_message_id, null: false
    t.datetime :created_at, precision: 6, null: false
    t.datetime :updated_at, precision: 6, null: false
    t.index :creator_id
    t.index :room_id
    t.foreign_key :rooms
    t.foreign_key :users, column: :creator_id
  end

  create_table :push_subscriptions, force: :cascade do |t|
    t.integer :user_id, null: false
    t.string :endpoint
    t.string :p256dh_key
    t.string :auth_key
    t.string :user_agent
    t.datetime :created_at, precision: 6, null: false
    t.datetime :updated_at, precision: 6, null: false
    t.index [:endpoint, :p256dh_key, :auth_key], name: "idx_on_endpoint_p256dh_key_auth_key_7553014576"
    t.index :user_id
    t.foreign_key :users
  end

  create_table :rooms, force: :cascade do |t|
    t.string :name
    t.string :type, null: false
    t.bigint :creator_id, null: false
    t.datetime :created_at, precision: 6, null: false
    t.datetime :updated_at, precision: 6, null: false
  end

  create_table :searches, force: :cascade do |t|
    t.integer :user_id, null: false
    t.string :query, null: false
    t.datetime :created_at, precision: 6, null: false
    t.datetime :updated_at, precision: 6, null: false
    t.index :user_id
    t.foreign_key :users
  end

  create_table :sessions, force: :cascade do |t|
    t.integer :user_id, null: false
    t.string :token, null: false
    t.string :ip_address
    t.string :user_agent
    t.datetime :last_active_at, precision: 6, null: false
    t.datetime :created_at, precision: 6, null: false
    t.datetime :updated_at, precision: 6, null: false
    t.index :token, unique: true
    t.index :user_id
    t.foreign_key :users
  end

  create_table :users, force: :cascade do |t|
    t.string :name, null: false
    t.string :email_address
    t.string :password_digest
    t.integer :role, null: false, default: 0
    t.integer :status, null: false, default: 0
    t.text :bio
    t.string :bot_token
    t.datetime :created_at, precision: 6, null: false
    t.datetime :updated_at, precision: 6, null: false
    t.index :bot_token, unique: true
    t.index :email_address, unique: true
  end

  create_table :webhooks, force: :cascade do |t|
    t.integer :user_id, null: false
    t.string :url
    t.datetime :created_at, precision: 6, null: false
    t.datetime :updated_at, precision: 6, null: false
    t.index :user_id
    t.foreign_key :users
  end


  # `create_virtual_table` (Rails 8) as the SQL it runs.
  execute "CREATE VIRTUAL TABLE message_search_index USING fts5 (body, tokenize=porter)"
end

# --- the models, as far as the rows need them ------------------------------------------------
class ApplicationRecord < ActiveRecord::Base
  self.abstract_class = true
end

class Account < ApplicationRecord
end

class User < ApplicationRecord
  has_secure_password validations: false
  enum role: %i[ member administrator bot ]
  enum status: %i[ active deactivated banned ]
  has_many :memberships
  has_one :webhook
end

class Session < ApplicationRecord
  belongs_to :user
end

class Room < ApplicationRecord
  has_many :memberships
  has_many :messages
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

class Message < ApplicationRecord
  belongs_to :room, touch: true
  belongs_to :creator, class_name: "User"
  has_many :boosts
end

class RichText < ApplicationRecord
  self.table_name = "action_text_rich_texts"
end

class Boost < ApplicationRecord
  belongs_to :message, touch: true
  belongs_to :booster, class_name: "User"
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

module Push
  class Subscription < ApplicationRecord
    self.table_name = "push_subscriptions"
    belongs_to :user
  end
end

class Blob < ApplicationRecord
  self.table_name = "active_storage_blobs"
end

class Attachment < ApplicationRecord
  self.table_name = "active_storage_attachments"
end

class VariantRecord < ApplicationRecord
  self.table_name = "active_storage_variant_records"
end

# --- helpers ---------------------------------------------------------------------------------
# A PNG of width x height in two colours, written by hand (zlib is Ruby's own).
def png(width, height, a, b)
  chunk = ->(type, data) { [data.bytesize].pack("N") + type + data + [Zlib.crc32(type + data)].pack("N") }
  rows = (0...height).map do |y|
    "\x00".b + (0...width).map { |x| ((x / 16 + y / 16).even? ? a : b) }.join.b
  end.join
  "\x89PNG\r\n\x1a\n".b +
    chunk.("IHDR", [width, height, 8, 2, 0, 0, 0].pack("NNCCCCC")) +
    chunk.("IDAT", Zlib::Deflate.deflate(rows)) +
    chunk.("IEND", "")
end

def pdf(text)
  body = "BT /F1 18 Tf 72 720 Td (#{text}) Tj ET"
  objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    "<< /Length #{body.bytesize} >>\nstream\n#{body}\nendstream",
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
  ]
  out = "%PDF-1.4\n".b
  offsets = objects.each_with_index.map do |object, i|
    offset = out.bytesize
    out << "#{i + 1} 0 obj\n#{object}\nendobj\n"
    offset
  end
  xref = out.bytesize
  out << "xref\n0 #{objects.size + 1}\n0000000000 65535 f \n"
  offsets.each { |o| out << format("%010d 00000 n \n", o) }
  out << "trailer\n<< /Size #{objects.size + 1} /Root 1 0 R >>\nstartxref\n#{xref}\n%%EOF\n"
end

# Active Storage's 28-character base36 key (`has_secure_token :key, length: 28`).
def blob_key
  SecureRandom.base36(28)
end

# Writes `bytes` where the disk service keeps `key` and records the blob, as
# `ActiveStorage::Blob.create_and_upload!` does (checksum: base64 of the MD5).
def upload(bytes, filename:, content_type:, metadata:, at:)
  key = blob_key
  path = File.join(FILES, key[0, 2], key[2, 2], key)
  FileUtils.mkdir_p(File.dirname(path))
  File.binwrite(path, bytes)
  Blob.create!(key: key, filename: filename, content_type: content_type, metadata: metadata.to_json,
               service_name: "local", byte_size: bytes.bytesize,
               checksum: Digest::MD5.base64digest(bytes), created_at: at)
end

def attach(name, record_type, record_id, blob, at)
  Attachment.create!(name: name, record_type: record_type, record_id: record_id, blob_id: blob.id, created_at: at)
end

# Rails 7.1+'s signed GlobalID of an Action Text attachable (purpose "attachable", no
# expiry): base64 of the JSON envelope, `--`, HMAC-SHA1 under the key derived for
# "signed_global_ids" (PBKDF2-HMAC-SHA256, 1000 iterations, 64 bytes).
SGID_KEY = OpenSSL::PKCS5.pbkdf2_hmac(secret_key_base, "signed_global_ids", 1000, 64, "SHA256")
def sgid(model, id)
  data = Base64.strict_encode64({ "_rails" => { "data" => "gid://campfire/#{model}/#{id}", "pur" => "attachable" } }.to_json)
  "#{data}--#{OpenSSL::HMAC.hexdigest("SHA1", SGID_KEY, data)}"
end

# A mention as Campfire's editor makes it and Action Text stores it.
def mention(user)
  content = %(<span class="mention" sgid="#{sgid("User", user.id)}"><img src="/users/#{user.id}/avatar" class="avatar" alt="#{user.name}"> #{user.name}</span>)
  %(<action-text-attachment sgid="#{sgid("User", user.id)}" content-type="application/vnd.campfire.mention" content="#{ERB::Util.html_escape(content)}"></action-text-attachment>)
end

T0 = Time.utc(2025, 11, 3, 9, 0, 0)
def at(minutes, usec = 123_456)
  T0 + minutes * 60 + Rational(usec, 1_000_000)
end

def post(room, creator, minutes, html, client_id: SecureRandom.uuid, plain: nil)
  message = Message.create!(room: room, creator: creator, client_message_id: client_id,
                            created_at: at(minutes), updated_at: at(minutes))
  if html
    RichText.create!(record_type: "Message", record_id: message.id, name: "body", body: html,
                     created_at: at(minutes), updated_at: at(minutes))
  end
  # Campfire's Message::Searchable: the plain text body in the FTS5 index.
  ActiveRecord::Base.connection.execute(
    ActiveRecord::Base.sanitize_sql(["INSERT INTO message_search_index (rowid, body) VALUES (?, ?)", message.id, plain || ""])
  )
  message
end

# Destroys a message as Campfire does: its rich text (`has_rich_text`, dependent) and its row
# in the search index (`Message::Searchable#remove_from_index`) go with it.
def unpost(message)
  RichText.where(record_type: "Message", record_id: message.id).delete_all
  ActiveRecord::Base.connection.execute("DELETE FROM message_search_index WHERE rowid = #{message.id.to_i}")
  message.destroy!
end

# --- the rows --------------------------------------------------------------------------------
PASSWORDS = {
  "ada@example.com" => "campfire-ada-1",
  "ben@example.com" => "campfire-ben-2",
  "cleo@example.com" => "campfire-cleo-3",
  "dot@example.com" => "campfire-dot-5",
  "eve@example.com" => "campfire-eve-6"
}.freeze
BCrypt::Engine.cost = BCrypt::Engine::MIN_COST

account = Account.create!(name: "Lakeside Works", join_code: "Lk7a-Q2wE-9zXc",
                          custom_styles: ":root { --color-link: oklch(55% 0.2 150); }\n.message__body { letter-spacing: 0.01em; }",
                          settings: { "restrict_room_creation_to_administrators" => true },
                          created_at: at(0, 0), updated_at: at(1))

ada = User.create!(name: "Ada Lovelace", email_address: "ada@example.com", password: PASSWORDS["ada@example.com"],
                   role: :administrator, bio: "Keeps the fire going", created_at: at(0), updated_at: at(0))
ben = User.create!(name: "Ben Okafor", email_address: "ben@example.com", password: PASSWORDS["ben@example.com"],
                   bio: "Plans & schedules <tight>", created_at: at(2), updated_at: at(2))
cleo = User.create!(name: "Cleo Park", email_address: "cleo@example.com", password: PASSWORDS["cleo@example.com"],
                    created_at: at(3), updated_at: at(3))
gone = User.create!(name: "Never Was", email_address: "never@example.com", password: "x" * 12, created_at: at(4), updated_at: at(4))
dot = User.create!(name: "Dot Quint", email_address: "dot-deactivated-2f1c7a52-4b7e-4f1e-9d55-0b8f3f9b7d11@example.com",
                   password: PASSWORDS["dot@example.com"], status: :deactivated, created_at: at(5), updated_at: at(50))
eve = User.create!(name: "Eve Spammer", email_address: "eve@example.com", password: PASSWORDS["eve@example.com"],
                   status: :banned, created_at: at(6), updated_at: at(60))
robo = User.create!(name: "Robo", role: :bot, bot_token: "Xy7Kq2Lm9Pz4", created_at: at(7), updated_at: at(7))
robo.create_webhook!(url: "http://127.0.0.1:9/robo-hook", created_at: at(7), updated_at: at(7))
gone.destroy!

Ban.create!(user: eve, ip_address: "203.0.113.9", created_at: at(60), updated_at: at(60))

all_talk = Rooms::Open.create!(name: "All Talk", creator_id: ada.id, created_at: at(1), updated_at: at(1))
plans = Rooms::Closed.create!(name: "Secret Plans", creator_id: ada.id, created_at: at(8), updated_at: at(8))
scratch = Rooms::Closed.create!(name: "Scratch", creator_id: ben.id, created_at: at(9), updated_at: at(9))
direct = Rooms::Direct.create!(creator_id: ada.id, created_at: at(10), updated_at: at(10))
water = Rooms::Open.create!(name: "Watercooler", creator_id: cleo.id, created_at: at(11), updated_at: at(11))
scratch.destroy!

def member(room, user, involvement: "mentions", unread_at: nil, minutes: 12)
  Membership.create!(room: room, user: user, involvement: involvement, unread_at: unread_at,
                     created_at: at(minutes), updated_at: at(minutes))
end

[ada, ben, cleo, dot, eve, robo].each { |u| member(all_talk, u) }
member(water, ada, unread_at: at(95))
member(water, ben, involvement: "nothing")
member(water, cleo, involvement: "everything")
member(water, robo, involvement: "invisible")
Membership.create!(room: water, user: eve, involvement: nil, created_at: at(12), updated_at: at(12))
member(plans, ada)
member(plans, ben, unread_at: at(41))
member(direct, ada, involvement: "everything")
member(direct, cleo, involvement: "everything", unread_at: at(70, 0))
# A stopped Campfire's presence columns as a crash left them.
Membership.where(room: all_talk, user: ben).update_all(connections: 2, connected_at: at(99))

hello = post(all_talk, ada, 20, "<div>Welcome to <strong>All Talk</strong>! Read <a href=\"https://example.com/guide\">the guide</a>.</div>",
             plain: "Welcome to All Talk! Read the guide.")
shout = post(all_talk, ada, 21, "<div>#{mention(ben)} can you bring the kettle?</div>", plain: "@Ben Okafor can you bring the kettle?")
reply = post(all_talk, ben, 22, "<div>On it 🫖</div>", plain: "On it 🫖")
_spam = post(all_talk, eve, 23, "<div>buy now</div>", plain: "buy now")
unpost(_spam)

photo_bytes = png(1600, 1000, "\x20\x60\xa0".b, "\xf0\xc0\x30".b)
thumb_bytes = png(1200, 750, "\x20\x60\xa0".b, "\xf0\xc0\x30".b)
pdf_bytes = pdf("Quarterly figures, Lakeside Works")
photo_message = post(all_talk, cleo, 30, nil, plain: "lake.png")
photo = upload(photo_bytes, filename: "lake.png", content_type: "image/png",
               metadata: { identified: true, width: 1600, height: 1000, analyzed: true }, at: at(30))
attach("attachment", "Message", photo_message.id, photo, at(30))
thumb_digest = ActiveStorage::Variation.new(resize_to_limit: [1200, 800]).digest
variant = VariantRecord.create!(blob_id: photo.id, variation_digest: thumb_digest)
thumb = upload(thumb_bytes, filename: "lake.png", content_type: "image/png",
               metadata: { identified: true, width: 1200, height: 750, analyzed: true }, at: at(30, 654_321))
attach("image", "ActiveStorage::VariantRecord", variant.id, thumb, at(30, 654_321))

report_message = post(plans, ben, 40, nil, plain: "figures.pdf")
report = upload(pdf_bytes, filename: "figures.pdf", content_type: "application/pdf",
                metadata: { identified: true, analyzed: true }, at: at(40))
attach("attachment", "Message", report_message.id, report, at(40))
secret = post(plans, ada, 41, "<div>The launch is on <em>Friday</em>.</div>", plain: "The launch is on Friday.")

dm = post(direct, ada, 70, "<div>#{mention(cleo)} lunch?</div>", plain: "@Cleo Park lunch?")
  .tap { |m| m.update_columns(created_at: at(70, 0), updated_at: at(70, 0)) }
bot_says = post(water, robo, 80, "Build 1041 passed", plain: "Build 1041 passed")
water_talk = post(water, cleo, 95, "<div>Cake in the kitchen!</div>", plain: "Cake in the kitchen!")
# A client that sent its message twice: Campfire's client_message_id is not unique.
again = post(water, cleo, 95, "<div>Cake in the kitchen!</div>", client_id: water_talk.client_message_id,
             plain: "Cake in the kitchen!")
last = post(water, cleo, 96, "<div>(never mind)</div>", plain: "(never mind)")
unpost(last)

Boost.create!(message: shout, booster: cleo, content: "👍", created_at: at(25), updated_at: at(25))
Boost.create!(message: shout, booster: ada, content: "🔥🔥", created_at: at(26), updated_at: at(26))
Boost.create!(message: reply, booster: ada, content: "nice kettle", created_at: at(27), updated_at: at(27))

logo = upload(png(256, 256, "\xc0\x40\x10".b, "\xff\xff\xff".b), filename: "logo.png", content_type: "image/png",
              metadata: { identified: true, width: 256, height: 256, analyzed: true }, at: at(1))
attach("logo", "Account", account.id, logo, at(1))
avatar = upload(png(96, 96, "\x10\x80\x40".b, "\xe0\xe0\xe0".b), filename: "ada.png", content_type: "image/png",
                metadata: { identified: true, width: 96, height: 96, analyzed: true }, at: at(2))
attach("avatar", "User", ada.id, avatar, at(2))

Session.create!(user: ada, token: "Zq4h8mJ2xR6tV1nB5cL9wY3k", ip_address: "198.51.100.7",
                user_agent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0", last_active_at: at(97),
                created_at: at(15), updated_at: at(97))
Session.create!(user: ben, token: "Pp2s7dK4fG8hJ1lQ6wE3rT9y", ip_address: "2001:db8::42",
                user_agent: "Campfire iOS", last_active_at: at(98), created_at: at(16), updated_at: at(98))

Push::Subscription.create!(user: ada, endpoint: "https://push.example.net/send/abc123",
                           p256dh_key: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM",
                           auth_key: "tBHItJI5svbpez7KI4CCXg", user_agent: "Mozilla/5.0 Firefox/133.0",
                           created_at: at(17), updated_at: at(17))

Search.create!(user: ada, query: "launch", created_at: at(90), updated_at: at(91))
# Rows Hearth has no place for: the same query twice (Campfire's `Search.record` touches the
# one it finds, but nothing in the schema stops a second), and a rich text of another record.
Search.create!(user: ada, query: "launch", created_at: at(85), updated_at: at(85))
RichText.create!(record_type: "Account", record_id: account.id, name: "welcome", body: "<div>Hello!</div>",
                 created_at: at(1), updated_at: at(1))
Search.create!(user: ben, query: "figures pdf", created_at: at(92), updated_at: at(92))

# Rails 8 runs SQLite in WAL mode; a stopped server leaves no -wal file behind.
ActiveRecord::Base.connection.execute("PRAGMA journal_mode = WAL")
counts = %w[accounts users sessions rooms memberships messages boosts action_text_rich_texts
            active_storage_blobs active_storage_attachments active_storage_variant_records bans
            searches webhooks push_subscriptions].to_h do |table|
  [table, ActiveRecord::Base.connection.select_value("SELECT COUNT(*) FROM #{table}")]
end
ActiveRecord::Base.connection.disconnect!

puts JSON.generate(
  counts: counts,
  passwords: PASSWORDS,
  users: { ada: ada.id, ben: ben.id, cleo: cleo.id, dot: dot.id, eve: eve.id, robo: robo.id, gone: gone.id },
  rooms: { all_talk: all_talk.id, plans: plans.id, direct: direct.id, water: water.id, scratch: scratch.id },
  messages: { hello: hello.id, shout: shout.id, reply: reply.id, photo: photo_message.id, report: report_message.id,
              secret: secret.id, dm: dm.id, bot: bot_says.id, water: water_talk.id, again: again.id,
              last: last.id },
  # Rows with no place in Hearth, per table.
  skipped: { searches: 1, action_text_rich_texts: 1 },
  blobs: { photo: photo.key, thumb: thumb.key, report: report.key, logo: logo.key, avatar: avatar.key },
  thumb_digest: thumb_digest
)
